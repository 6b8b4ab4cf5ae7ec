package dev.outbox.it;

import dev.outbox.testkit.Await;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference harvesting path end to end, against real servers: concurrent writers commit business rows and
 * outbox messages over 200 keys in Postgres, three dispatchers (each with its own connection pool,
 * {@code KafkaMessageBroker} and {@code KafkaLeaderTransport} in one leader group) harvest the outbox into
 * Kafka, and a consumer checks every record of the data topic — while leaders are closed and crashed, the
 * Kafka broker restarts, and the dispatchers' database connections are killed. Each scenario also commits two
 * poison records (too large for the topic; a topic that does not exist). Three inbox consumers (on Postgres, MySQL
 * and MariaDB, see {@link InboxSide}) apply every message's effect exactly once through it all. {@link Scenario#finish()}
 * asserts G1–G4 and G6 and the inbox consumers' effects; each test asserts its take-over or recovery times (G5) against the bounds below and prints a
 * summary line. The leader-change and killed-connections scenarios run twice: with the leader elected in Kafka's
 * consumer group, and with it elected by a lease in the database ({@code SqlLeaderTransport}, its lease as long as
 * the group's session). Set {@code -Doutbox.e2e.seed=<seed>} to repeat a run's key choices.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class PostgresKafkaEndToEndTest {
    /**
     * G5 after an orderly close: the closing leader drains (at most the drain timeout) and leaves the group; the
     * others rejoin at their next group heartbeat and the new leader starts at once. Measured: well under 1 s.
     */
    static final Duration ORDERLY_TAKEOVER_BOUND = Scenario.CONFIG.drainTimeout().plusSeconds(2);
    /**
     * G5 after a crash: nobody leaves the group, so the group drops the dead member after
     * {@code max.poll.interval.ms} (= {@code session.timeout.ms}, 6 s here), then rebalances. Measured: about
     * 6.5 s.
     */
    static final Duration CRASH_TAKEOVER_BOUND = Scenario.SESSION_TIMEOUT.plusSeconds(5);
    /** A leader cut off from Kafka fences itself after the heartbeat timeout (plus one poll interval). */
    static final Duration FENCE_BOUND = Scenario.CONFIG.heartbeatTimeout().plusSeconds(2);
    /**
     * Publishing resumes after the broker is back: the clients reconnect, the group coordinator reloads the leader
     * group, the fenced leader sees its heartbeats again (or the group moves leadership after a session timeout).
     */
    static final Duration KAFKA_RECOVERY_BOUND = Scenario.SESSION_TIMEOUT.multipliedBy(3);
    /** Marking and purging resume after the dispatchers' connections were killed: a backoff and a reconnect. */
    static final Duration DATABASE_RECOVERY_BOUND = Duration.ofSeconds(10);

    private static Scenario start(String name, long seed, Scenario.Election election) {
        return Scenario.start(election == Scenario.Election.KAFKA ? name : name + "_db_election", seed,
                TestServers.kafka(), Scenario.Setup.of(InboxSide::new).election(election));
    }

    private static long seed() {
        Long fixed = Long.getLong("outbox.e2e.seed");
        return fixed != null ? fixed : System.nanoTime();
    }

    /** Under each leader election: Kafka's consumer group, and the database's lease. */
    @ParameterizedTest
    @EnumSource(Scenario.Election.class)
    void leaderClosedThenNextLeaderCrashed(Scenario.Election election) throws Exception {
        long seed = seed();
        try (Scenario s = start("leaders", seed, election)) {
            s.warmUp();
            Node first = s.awaitLeader();
            Scenario.Takeover closed = s.handOver("close " + first.name, first, () -> s.closeOrderly(first));
            s.awaitTraffic(2_000);
            Node second = s.awaitLeader();
            Scenario.Takeover crashed = s.handOver("crash " + second.name, second, () -> s.crash(second));
            s.awaitTraffic(2_000);
            Scenario.Result r = s.finish();

            assertThat(Duration.ofMillis(closed.firstPublishMillis())).as("G5 after an orderly close (seed %d)", seed)
                    .isLessThanOrEqualTo(ORDERLY_TAKEOVER_BOUND);
            assertThat(Duration.ofMillis(crashed.firstPublishMillis())).as("G5 after a crash (seed %d)", seed)
                    .isLessThanOrEqualTo(CRASH_TAKEOVER_BOUND);
            // G3: the crashed leader is not replaced before it would have fenced itself.
            assertThat(Duration.ofMillis(crashed.acquiredMillis())).as("take-over after a crash")
                    .isGreaterThanOrEqualTo(Scenario.CONFIG.heartbeatTimeout());
            // G4: an orderly hand-over drains first, so it makes no duplicates.
            assertThat(r.duplicatesByFault().get(closed.what())).as("duplicates after an orderly close").isZero();
        }
    }

    @Test
    void kafkaBrokerRestartedMidStream() throws Exception {
        long seed = seed();
        try (Scenario s = Scenario.start("kafka_restart", seed, InboxSide::new)) {
            s.warmUp();
            s.awaitLeader();
            long stopping = System.nanoTime();
            s.fault("Kafka restart", () -> s.kafka().stop());
            long stopMillis = Scenario.millisSince(stopping);
            // Cut off from Kafka, the leader stops seeing its own heartbeats and fences itself. (The listener hears of
            // the fence just after the dispatcher stopped publishing: wait for both.)
            boolean fenced = Await.until(() -> s.live().stream().noneMatch(Node::isLeader)
                    && s.timeline().first(stopping, e -> e.kind() == LeadershipTimeline.Kind.FENCED) != null,
                    FENCE_BOUND.plusSeconds(30));
            LeadershipTimeline.Event fence = s.timeline().first(stopping,
                    e -> e.kind() == LeadershipTimeline.Kind.FENCED);
            // Let the backlog grow while Kafka is away (beyond the writers' usual limit).
            s.limitBacklog(false);
            s.awaitCommitted(2_000);
            long downMillis = Scenario.millisSince(stopping);
            long restarting = System.nanoTime();
            s.kafka().restart();
            s.limitBacklog(true);
            long restartMillis = Scenario.millisSince(restarting);
            long armed = s.armAll();
            long resumedMillis = s.awaitFirstPublishAfter(armed, "the Kafka restart");
            long fencedAfter = fence == null ? -1 : TimeUnit.NANOSECONDS.toMillis(fence.nanos() - stopping);
            s.note(String.format("Kafka stopped in %d ms, the leader fenced itself %d ms after the stop began,"
                    + " broker down %d ms, restarted in %d ms, publishing resumed %d ms after it was back",
                    stopMillis, fencedAfter, downMillis, restartMillis, resumedMillis));
            s.awaitTraffic(2_000);
            s.finish();

            assertThat(fenced).as("no leader while Kafka was down (seed %d)", seed).isTrue();
            assertThat(fence).as("the leader fenced itself while Kafka was down\n%s", s.timeline()).isNotNull();
            assertThat(Duration.ofMillis(fencedAfter)).as("fenced after the broker stopped")
                    .isLessThanOrEqualTo(Duration.ofMillis(stopMillis).plus(FENCE_BOUND));
            assertThat(Duration.ofMillis(resumedMillis)).as("publishing resumed after the broker returned (seed %d)",
                    seed).isLessThanOrEqualTo(KAFKA_RECOVERY_BOUND);
        }
    }

    /** Under each leader election: with the database's, the leader's lease renewals lose their sessions too. */
    @ParameterizedTest
    @EnumSource(Scenario.Election.class)
    void databaseConnectionsKilledMidStream(Scenario.Election election) throws Exception {
        long seed = seed();
        try (Scenario s = start("db_kill", seed, election)) {
            s.warmUp();
            s.awaitLeader();
            StringBuilder recovery = new StringBuilder();
            long worst = 0;
            for (int i = 1; i <= 3; i++) {
                int[] killed = new int[1];
                // The dispatchers' connections, and those of the inbox consumers on Postgres, MySQL and MariaDB.
                s.fault("kill #" + i, () -> killed[0] = s.database().killConnections(Scenario.DISPATCHER_USER)
                        + s.inboxes().killConnections());
                long armed = s.armPurges();
                assertThat(killed[0]).as("the dispatchers' sessions killed").isPositive();
                long resumed = s.awaitPurgeAfter(armed, "killing the dispatchers' connections");
                worst = Math.max(worst, resumed);
                recovery.append(i == 1 ? "" : ", ").append(killed[0]).append(" sessions killed, purging again after ")
                        .append(resumed).append(" ms");
                s.awaitTraffic(1_500);
            }
            s.note(recovery.toString());
            Scenario.Result r = s.finish();

            assertThat(r.failuresReported()).as("the dispatchers noticed the killed connections").isPositive();
            assertThat(Duration.ofMillis(worst)).as("purging resumed after the kills (seed %d)", seed)
                    .isLessThanOrEqualTo(DATABASE_RECOVERY_BOUND);
        }
    }
}
