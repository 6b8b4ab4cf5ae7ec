package dev.outbox.benchmarks;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;

/**
 * Spring Modulith's backlog drain: {@code rows} publications left incomplete in its JDBC event publication registry
 * by an application killed between the commits and the sends (its externalizations held back behind its own task
 * executor, see {@code ModulithFill}), then the application started again with
 * {@code republish-outstanding-events-on-restart=true} and the real Kafka: from its JVM's start to the first record
 * on the topic (start), and from the first record to the last (the drain's rate).
 */
final class ModulithDrain {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Callable<PeerChild> start;
    private final DoubleSupplier processSeconds;

    /**
     * @param start          starts a Modulith child JVM and waits for its READY
     * @param processSeconds the CPU seconds of the run's processes (this JVM, the child, Postgres)
     */
    ModulithDrain(BenchEnvironment env, BenchmarkOptions options, Callable<PeerChild> start,
                  DoubleSupplier processSeconds) {
        this.env = env;
        this.options = options;
        this.start = start;
        this.processSeconds = processSeconds;
    }

    /** Runs the drain of {@code rows} records with sequence numbers from {@code base}. */
    PeerBenchmark.Drain run(int rows, long base) throws Exception {
        Progress.say("modulith drain: %,d publications left incomplete by a killed application ...", rows);
        BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS event_publication");
        String topic = env.newTopic("modulith-drain");
        PeerChild first = start.call();
        try {
            first.send(String.join(" ", "FILL", topic, Integer.toString(rows), Integer.toString(options.writers),
                    "100", Integer.toString(PeerBenchmark.KEYS_PER_WRITER), Integer.toString(options.valueBytes),
                    Long.toString(base)));
            first.await("FILLED", Duration.ofMinutes(20));
        } finally {
            first.kill();
        }
        long incomplete = BenchEnvironment.queryLong(env.pool(),
                "SELECT count(*) FROM event_publication WHERE completion_date IS NULL");
        if (incomplete != rows) {
            throw new IllegalStateException("modulith drain: expected " + rows + " incomplete publications in"
                    + " event_publication after the kill, found " + incomplete);
        }
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, rows).start();
        double proc0 = processSeconds.getAsDouble();
        long started = System.nanoTime();
        double proc;
        try (PeerChild second = start.call()) {
            // Resubmission ran at a few hundred records/s on this machine: 10 minutes, or 20 ms a record.
            long end = started + Duration.ofSeconds(Math.max(600, rows / 50)).toNanos();
            while (checker.distinct() < rows && System.nanoTime() - end < 0) {
                LockSupport.parkNanos(2_000_000L);
            }
            proc = processSeconds.getAsDouble() - proc0;
        }
        checker.stop();
        long firstArrival = Long.MAX_VALUE;
        for (int i = 0; i < rows; i++) {
            long t = checker.consumed.get(i);
            if (t != 0) {
                firstArrival = Math.min(firstArrival, t);
            }
        }
        PeerBenchmark.Drain d = new PeerBenchmark.Drain("modulith", checker.distinct(),
                firstArrival == Long.MAX_VALUE ? 0 : (checker.lastArrival() - firstArrival) / 1e9,
                firstArrival == Long.MAX_VALUE ? Double.NaN : (firstArrival - started) / 1e9,
                rows - checker.distinct(), proc * 1e6 / rows, Machine.loadAverage());
        Progress.say("modulith drain: %,d records in %.2f s, %,.0f records/s, first after %.1f s, %d left,"
                        + " %d duplicates, %d out of per-key order", d.records(), d.seconds(), d.rate(),
                d.startSeconds(), d.left(), checker.duplicates(), checker.outOfOrder());
        return d;
    }
}
