package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.StorageFencing;
import dev.outbox.testkit.LeaderTransportContract;
import dev.outbox.testservers.TestServers;

import java.time.Duration;
import java.util.UUID;

/**
 * The leader transport contract every election passes, run over Kafka ({@link KafkaLeaderTransport}): each test's
 * election is a leader topic and group of its own. Timings as {@link KafkaNeliTest}'s: heartbeat timeout 1 s, poll
 * interval 100 ms, delivery timeout 2 s, session timeout 6 s (the broker's minimum). Kafka's election does not fence
 * the store itself (the dispatcher takes the epoch), so the paused-leader test checks the take-over and the lapsed
 * lease only; the database's refusal is checked where a store is elected with ({@code SqlLeaderTransportContract}).
 */
class KafkaLeaderTransportContractTest extends LeaderTransportContract {
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration HEARTBEAT_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration DELIVERY_TIMEOUT = Duration.ofSeconds(2);
    private static final int SESSION_TIMEOUT_MS = 6_000;
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(POLL)
            .heartbeatTimeout(HEARTBEAT_TIMEOUT).drainTimeout(Duration.ofSeconds(2)).build();

    @Override
    protected Election newElection() {
        String topic = "neli-contract-" + UUID.randomUUID();
        String bootstrap = TestServers.kafka().bootstrapServers();
        return new Election() {
            @Override
            public LeaderTransport member(String name) {
                return KafkaLeaderTransport.builder().bootstrapServers(bootstrap).topic(topic).dispatcherConfig(CONFIG)
                        .deliveryTimeout(DELIVERY_TIMEOUT).consumerProperty("client.id", topic + "-" + name)
                        .consumerProperty("session.timeout.ms", SESSION_TIMEOUT_MS).build();
            }

            @Override
            public StorageFencing fencing() {
                return null;
            }

            @Override
            public void abandon(LeaderTransport transport) {
                ((KafkaLeaderTransport) transport).abandon();
            }
        };
    }

    /**
     * A crashed member's session expires no sooner than the session timeout less a group heartbeat interval after
     * its last heartbeat, and the group rebalances within a few seconds after; a leaving member triggers a rebalance
     * at once, which completes within a session timeout.
     */
    @Override
    protected Timings timings() {
        Duration session = Duration.ofMillis(SESSION_TIMEOUT_MS);
        return new Timings(HEARTBEAT_TIMEOUT, POLL, DELIVERY_TIMEOUT, session.minusMillis(333),
                session.plusSeconds(5), session);
    }
}
