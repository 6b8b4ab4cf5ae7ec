package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.testkit.ShardedLeaderTransportContract;
import dev.outbox.testservers.TestServers;

import java.time.Duration;
import java.util.UUID;

/**
 * The sharded leader transport contract every shard election passes, run over Kafka's group coordinator
 * ({@link KafkaShardedLeaderTransport}): each test's group is a leader topic of six partitions and a group of its own.
 * Timings as {@link KafkaShardedLeaderTransportTest}'s: poll interval 50 ms, heartbeat timeout 1 s (so Kafka's group
 * heartbeat every 333 ms), session timeout 6 s (the broker's minimum).
 */
class KafkaShardedLeaderTransportContractTest extends ShardedLeaderTransportContract {
    private static final Duration POLL = Duration.ofMillis(50);
    private static final int SESSION_TIMEOUT_MS = 6_000;
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(POLL)
            .heartbeatTimeout(Duration.ofSeconds(1)).drainTimeout(Duration.ofSeconds(2)).build();

    @Override
    protected Group newGroup() {
        String topic = "shard-contract-" + UUID.randomUUID();
        String bootstrap = TestServers.kafka().bootstrapServers();
        return new Group() {
            @Override
            public ShardedLeaderTransport member(String name) {
                return KafkaShardedLeaderTransport.builder().bootstrapServers(bootstrap).topic(topic).shards(SHARDS)
                        .dispatcherConfig(CONFIG).deliveryTimeout(Duration.ofSeconds(2))
                        .consumerProperty("client.id", topic + "-" + name)
                        .consumerProperty("session.timeout.ms", SESSION_TIMEOUT_MS).build();
            }

            @Override
            public void abandon(ShardedLeaderTransport transport) {
                ((KafkaShardedLeaderTransport) transport).abandon();
            }
        };
    }

    /**
     * A rebalance that moves shards takes two rounds (revoke, then assign), each within a few seconds: 30 s is
     * plenty. A crashed member's session expires no sooner than the session timeout less a group heartbeat interval
     * after its last group heartbeat, and the coordinator's rebalance hands its shards on within a few seconds.
     */
    @Override
    protected Timings timings() {
        Duration session = Duration.ofMillis(SESSION_TIMEOUT_MS);
        return new Timings(POLL, Duration.ofSeconds(30), session.minusMillis(333), session.plusSeconds(5));
    }
}
