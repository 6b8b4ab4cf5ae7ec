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
 * frozen (SIGSTOP) for longer than the dispatchers' statement timeout, then let run on (SIGCONT), one after the
 * other in one scenario. The writers' transactions fail meanwhile and are retried; what committed is read back
 * from the business table.
 * Each fault lasts until the dispatchers have reported a failure, so that it really hit them. {@link
 * Scenario#finish()} then asserts G1–G4 and G6 as for every scenario; the test measures how long purging took to
 * resume once the database was back, asserts it against {@link #RECOVERY_BOUND} and prints it.
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

    /**
     * One scenario, three outages in a row (one set-up and one check for all three keeps the build lean): the
     * database stopped and started again, made read-only and writable again, paused past the statement timeout and
     * resumed. Each is a fault of its own for the duplicate count.
     */
    @Test
    void databaseStoppedMadeReadOnlyAndPausedUnderLoad() throws Exception {
        long seed = seed();
        try (Scenario s = Scenario.start("db_outage", seed, InboxSide::new)) {
            s.warmUp();
            s.awaitLeader();
            s.tolerateWriterFailures();
            long worst = 0;
            worst = Math.max(worst, outage(s, seed, "database stopped", x -> x.database().stop(),
                    x -> x.database().restart()));
            worst = Math.max(worst, outage(s, seed, "database read-only", x -> x.database().readOnly(true),
                    x -> x.database().readOnly(false)));
            worst = Math.max(worst, outage(s, seed, "database paused", x -> x.database().pause(),
                    x -> x.database().resume()));
            s.finish();

            assertThat(Duration.ofMillis(worst)).as("purging resumed after each outage ended (seed %d)", seed)
                    .isLessThanOrEqualTo(RECOVERY_BOUND);
        }
    }

    /**
     * One database fault: {@code begin} under load, held until the dispatchers have failed on it, then {@code end};
     * notes the outage and returns how long purging took to resume after it ended (ms).
     */
    private static long outage(Scenario s, long seed, String what, Consumer<Scenario> begin, Consumer<Scenario> end) {
        int failuresBefore = s.failuresReported();
        Scenario.Outage o = s.outage(what, () -> begin.accept(s), () -> end.accept(s), NOTICE_BOUND);
        s.note(what + ": " + o);
        assertThat(s.failuresReported()).as("the dispatchers noticed '%s' (seed %d)", what, seed)
                .isGreaterThan(failuresBefore);
        s.awaitTraffic(1_000);
        return o.resumedMillis();
    }
}
