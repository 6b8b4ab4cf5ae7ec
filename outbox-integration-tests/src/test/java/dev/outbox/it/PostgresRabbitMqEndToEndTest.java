package dev.outbox.it;

import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference harvesting path end to end on RabbitMQ, against real servers: the harness's writers commit business
 * rows and outbox messages over 200 keys in Postgres, three dispatchers elect their leader by a lease in the database
 * ({@code SqlLeaderTransport}) and publish with {@code RabbitMqMessageBroker} to the per-key topology (a
 * consistent-hash exchange over four durable single-active-consumer queues, see {@link RabbitMqDataBroker}), and a
 * consumer of those queues checks every record. One scenario strikes every fault in turn, under load: the leader
 * crashes (killed like a process: its client closed unflushed, its database sessions killed, its lease left to
 * expire), every connection of the RabbitMQ node is closed ({@code rabbitmqctl close_all_connections}), the node is
 * restarted, and the dispatchers' database connections are killed. Then {@link Scenario#finish()} asserts G1–G4 and
 * G6: nothing lost, no per-key order violation, every duplicate a record in flight at a fault and no more duplicates
 * per fault than were in flight. One scenario rather than one per fault keeps the build's time down. Set
 * {@code -Doutbox.e2e.seed=<seed>} to repeat a run's key choices.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PostgresRabbitMqEndToEndTest {
    /**
     * Publishing resumes after the node's connections were closed: the adapter opens a new connection at its next
     * send, after the dispatcher's I/O back-off. Measured: well under 1 s.
     */
    static final Duration RECONNECT_BOUND = Duration.ofSeconds(10);
    /**
     * Publishing resumes after the node is back (its restart returns once it accepts connections): a back-off and a
     * reconnect, as after closed connections.
     */
    static final Duration RESTART_RECOVERY_BOUND = Duration.ofSeconds(15);

    private static long seed() {
        Long fixed = Long.getLong("outbox.e2e.seed");
        return fixed != null ? fixed : System.nanoTime();
    }

    @Test
    void leaderCrashedConnectionsClosedNodeRestartedDatabaseConnectionsKilled() throws Exception {
        long seed = seed();
        RabbitMqServer rabbit = TestServers.rabbitMq();
        Scenario.Setup setup = Scenario.Setup.of((scenario, bootstrap, topic) -> Scenario.Inboxes.NONE)
                .election(Scenario.Election.DATABASE);
        try (Scenario s = Scenario.start("rabbitmq", seed, new RabbitMqDataBroker(rabbit), setup)) {
            s.warmUp();

            Node leader = s.awaitLeader();
            Scenario.Takeover crashed = s.handOver("crash " + leader.name, leader, () -> s.crash(leader));
            s.awaitTraffic(1_500);

            int[] closed = new int[1];
            long closing = System.nanoTime();
            s.fault("RabbitMQ connections closed", () -> closed[0] = rabbit.closeAllConnections());
            long armed = s.armAll();
            long reconnected = s.awaitFirstAckOfSendAfter(armed, "closing the RabbitMQ connections");
            long closeMillis = Scenario.millisSince(closing);
            s.awaitTraffic(1_500);

            long restarting = System.nanoTime();
            s.fault("RabbitMQ restart", rabbit::restart);
            long restartMillis = Scenario.millisSince(restarting);
            armed = s.armAll();
            long resumed = s.awaitFirstAckOfSendAfter(armed, "the RabbitMQ restart");
            s.awaitTraffic(1_500);

            int[] killed = new int[1];
            s.fault("database connections killed",
                    () -> killed[0] = s.database().killConnections(Scenario.DISPATCHER_USER));
            long purgesArmed = s.armPurges();
            long purging = s.awaitPurgeAfter(purgesArmed, "killing the dispatchers' database connections");
            s.awaitTraffic(1_500);

            s.note(String.format("%d RabbitMQ connections closed, publishing again %d ms later (%d ms after the"
                    + " close began); node restarted in %d ms, publishing again %d ms after it was back; %d database"
                    + " sessions killed, purging again after %d ms", closed[0], reconnected, closeMillis,
                    restartMillis, resumed, killed[0], purging));
            Scenario.Result r = s.finish();

            assertThat(r.lost()).as("records lost (seed %d)", seed).isZero();
            assertThat(r.orderViolations()).as("per-key order violations (seed %d)", seed).isZero();
            for (String fault : r.duplicatesByFault().keySet()) {
                if (r.inFlightByFault().containsKey(fault)) {
                    assertThat(r.duplicatesByFault().get(fault)).as("duplicates after '%s' (seed %d)", fault, seed)
                            .isLessThanOrEqualTo(r.inFlightByFault().get(fault));
                }
            }
            assertThat(closed[0]).as("RabbitMQ connections closed: the dispatchers' and the consumer's")
                    .isGreaterThanOrEqualTo(3);
            assertThat(killed[0]).as("the dispatchers' database sessions killed").isPositive();
            assertThat(r.failuresReported()).as("the dispatchers noticed the faults").isPositive();
            assertThat(Duration.ofMillis(crashed.firstPublishMillis())).as("G5 after a crash (seed %d)", seed)
                    .isLessThanOrEqualTo(PostgresKafkaEndToEndTest.CRASH_TAKEOVER_BOUND);
            assertThat(Duration.ofMillis(crashed.acquiredMillis())).as("take-over after a crash")
                    .isGreaterThanOrEqualTo(Scenario.CONFIG.heartbeatTimeout());
            assertThat(Duration.ofMillis(reconnected)).as("publishing after the connections were closed (seed %d)",
                    seed).isLessThanOrEqualTo(RECONNECT_BOUND);
            assertThat(Duration.ofMillis(resumed)).as("publishing after the node restarted (seed %d)", seed)
                    .isLessThanOrEqualTo(RESTART_RECOVERY_BOUND);
            assertThat(Duration.ofMillis(purging)).as("purging after the database sessions were killed (seed %d)",
                    seed).isLessThanOrEqualTo(PostgresKafkaEndToEndTest.DATABASE_RECOVERY_BOUND);
        }
    }
}
