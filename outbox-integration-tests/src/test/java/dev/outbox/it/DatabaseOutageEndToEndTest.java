package dev.outbox.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox's own database fails under load, on the real Postgres server of the end-to-end suite (see
 * {@link Scenario}: four writers, three dispatchers, Kafka, the inbox consumers, which share that server): it is
 * stopped and started again, made read-only (a fail-over to a node that refuses writes) and writable again, and
 * frozen (SIGSTOP) for longer than the dispatchers' statement and network timeouts, then let run on (SIGCONT). The
 * writers' transactions fail meanwhile and are retried; what committed is read back from the business table.
 * Each fault lasts until the dispatchers have reported a failure, so that it really hit them. {@link
 * Scenario#finish()} then asserts G1–G4 and G6 as for every scenario; each test measures how long marking and
 * purging took to resume once the database was back, asserts it against {@link #RECOVERY_BOUND} and prints it.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class DatabaseOutageEndToEndTest {
    /**
     * Purging resumes after the database is back: the dispatcher's backoff (at most
     * {@code maxIoErrorBackoff}, 500 ms here), new connections (the pool's connection timeout is 5 s), and a
     * mark and a send. Measured: well under 2 s.
     */
    static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);
    /** How long a fault may take to reach the dispatchers: a paused server is noticed at the network timeout. */
    static final Duration NOTICE_BOUND = Duration.ofSeconds(60);

    private static long seed() {
        Long fixed = Long.getLong("outbox.e2e.seed");
        return fixed != null ? fixed : System.nanoTime();
    }

    @Test
    void databaseStoppedAndRestartedUnderLoad() throws Exception {
        outage("db_restart", "database stopped", s -> s.database().stop(), s -> s.database().restart());
    }

    @Test
    void databaseMadeReadOnlyThenWritable() throws Exception {
        outage("db_read_only", "database read-only", s -> s.database().readOnly(true),
                s -> s.database().readOnly(false));
    }

    @Test
    void databasePausedPastTheStatementTimeout() throws Exception {
        outage("db_pause", "database paused", s -> s.database().pause(), s -> s.database().resume());
    }

    /**
     * Runs a scenario with one database fault: {@code begin} under load, held until the dispatchers and the writers
     * have failed on it, then {@code end}; measures the outage and the recovery and checks the guarantees.
     */
    private static void outage(String name, String what, Consumer<Scenario> begin, Consumer<Scenario> end)
            throws Exception {
        long seed = seed();
        try (Scenario s = Scenario.start(name, seed)) {
            s.warmUp();
            s.awaitLeader();
            s.tolerateWriterFailures();
            int failuresBefore = s.failuresReported();
            long[] times = new long[3];
            s.fault(what, () -> {
                long t0 = System.nanoTime();
                try {
                    begin.accept(s);
                    times[0] = Scenario.millisSince(t0);
                    Scenario.await(() -> s.failuresReported() > failuresBefore, NOTICE_BOUND,
                            () -> "a dispatcher failure after '" + what + "'");
                    times[1] = Scenario.millisSince(t0);
                } finally {
                    long t1 = System.nanoTime();
                    end.accept(s);
                    times[2] = Scenario.millisSince(t1);
                }
            });
            long armed = s.armPurges();
            long resumed = s.awaitPurgeAfter(armed, "the end of '" + what + "'");
            s.note(String.format("%s: took effect in %d ms, the dispatchers failed on it after %d ms, ended in %d ms,"
                    + " purging again %d ms after it ended", what, times[0], times[1], times[2], resumed));
            s.awaitTraffic(1_500);
            Scenario.Result r = s.finish();

            assertThat(r.failuresReported()).as("the dispatchers noticed '%s'", what).isGreaterThan(failuresBefore);
            assertThat(Duration.ofMillis(resumed)).as("purging resumed after '%s' ended (seed %d)", what, seed)
                    .isLessThanOrEqualTo(RECOVERY_BOUND);
        }
    }
}
