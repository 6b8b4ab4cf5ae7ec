package dev.outbox.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;

/**
 * The crash runs of the peers' run ({@link PeerBenchmark}): each system's publishing JVM SIGKILLed halfway through
 * its load and restarted at once (ours: {@link EngineCrash}, with a standby; Modulith's application, whose writers
 * go on after the restart; Debezium's connector, under the writers of this JVM); then every committed record (the
 * business rows of {@code peer_commits}, the database's truth) is looked for on the topic: lost, duplicates, out
 * of per-key order, and the time from the kill to the restarted system streaming.
 */
final class PeerCrashRuns {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final boolean fastFailover;
    private final PeerSetup setup;
    private final PeerWriters writers;
    private final List<PeerBenchmark.Crash> crashes;
    private final Map<String, List<String[]>> settings;
    private final LongUnaryOperator sequences;

    /**
     * @param fastFailover --crash-fast-failover: our crash run with the take-over scenario's fast timings
     * @param crashes      the run's crash runs, added to
     * @param settings     the run's printed settings, added to
     * @param sequences    takes that many sequence numbers of the run's and returns the first
     */
    PeerCrashRuns(BenchEnvironment env, BenchmarkOptions options, boolean fastFailover, PeerSetup setup,
                  List<PeerBenchmark.Crash> crashes, Map<String, List<String[]>> settings,
                  LongUnaryOperator sequences) {
        this.env = env;
        this.options = options;
        this.fastFailover = fastFailover;
        this.setup = setup;
        this.writers = new PeerWriters(env, options);
        this.crashes = crashes;
        this.settings = settings;
        this.sequences = sequences;
    }

    /**
     * The crash run: the peer's publishing JVM SIGKILLed halfway through {@code seconds} of load at {@code rate},
     * restarted at once; then every committed record (the business rows of peer_commits, the database's truth) is
     * looked for on the topic.
     */
    void crash(String system, int rate, double seconds) throws Exception {
        Progress.say("%s crash run: %,d records/s for %.0f s, SIGKILL at half time, restart ...", system, rate,
                seconds);
        String topic = env.newTopic(system + "-crash");
        long half = (long) (seconds * 1e9 / 2);
        int capacity = PeerWriters.capacity(rate, 2 * half) * 2;
        long base = sequences.applyAsLong(capacity);
        AtomicLongArray committed = new AtomicLongArray(capacity);
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, capacity).start();
        BenchEnvironment.execute(env.pool(), "DELETE FROM peer_commits WHERE system = '" + system + "'");
        double restart;
        if (system.equals("modulith")) {
            // Publications left incomplete by a latency line that fell behind would be resubmitted on start.
            BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS event_publication");
            PeerChild first = setup.startModulith();
            long start = System.nanoTime() + 300_000_000L;
            Path file = Files.createTempFile("peer-crash", ".bin");
            first.send(writers.modulithRun(topic, rate, start, start + 2 * half, base, 1, file));
            BenchEnvironment.pause(Duration.ofNanos(start + half - System.nanoTime()));
            first.kill();
            long killed = System.nanoTime();
            Files.deleteIfExists(file);
            // The restarted application resubmits the incomplete publications and its writers go on (new keys'
            // sequence numbers follow the killed run's, so per-key order still holds across the restart).
            try (PeerChild second = setup.startModulith()) {
                restart = (System.nanoTime() - killed) / 1e9;
                long committedBefore = BenchEnvironment.queryLong(env.pool(),
                        "SELECT coalesce(max(seq), 0) FROM peer_commits WHERE system = 'modulith'");
                long s2 = System.nanoTime() + 300_000_000L;
                writers.modulith(second, topic, rate, s2, s2 + half, committedBefore + 1, new AtomicLongArray(1));
                settle(checker, system, quiet(seconds));
            }
        } else if (system.equals("cursor") || system.equals("wal")) {
            EngineCrash engine = new EngineCrash(env, options, options.out, fastFailover);
            settings.put(system + " (crash run)", engine.settings(system));
            restart = engine.run(system, topic, rate, half, base, committed, checker,
                    () -> settle(checker, system, quiet(seconds)));
            Progress.say("%s crash run: after the kill, %s led", system, engine.takenOverBy);
        } else {
            Map<String, String> props = setup.freshDebezium("peer-debezium-crash-offsets.dat");
            PeerChild first = setup.startDebezium(props);
            long start = System.nanoTime() + 300_000_000L;
            Thread writing = new Thread(() -> {
                try {
                    writers.debezium(topic, rate, start, start + 2 * half, base, committed);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "peer-crash-writers");
            writing.start();
            BenchEnvironment.pause(Duration.ofNanos(start + half - System.nanoTime()));
            first.kill();
            long killed = System.nanoTime();
            try (PeerChild second = setup.startDebezium(props)) {
                restart = (System.nanoTime() - killed) / 1e9;
                writing.join();
                settle(checker, system, quiet(seconds));
            }
            setup.dropDebeziumSlot();
        }
        checker.stop();
        long total = 0;
        long lost = 0;
        try (Connection c = env.pool().getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT seq FROM peer_commits WHERE system = '" + system + "'")) {
            while (rs.next()) {
                total++;
                if (!checker.arrived(rs.getLong(1))) {
                    lost++;
                }
            }
        }
        PeerBenchmark.Crash result = new PeerBenchmark.Crash(system, total, lost, checker.duplicates(),
                checker.outOfOrder(), restart, Machine.loadAverage());
        crashes.add(result);
        Progress.say("%s crash run: %,d committed, %d lost, %d duplicates, %d out of per-key order; restarted and"
                        + " streaming %.1f s after the kill", system, total, lost, result.duplicates(),
                result.outOfOrder(), restart);
    }

    /** The quiet time that ends a crash run: 5 s, or half the run if that is shorter (the smoke test). */
    private static long quiet(double seconds) {
        return (long) (Math.min(5.0, seconds / 2) * 1e9);
    }

    /**
     * Waits until nothing has arrived for {@code quietNanos} after everything committed arrived (or 120 s in all):
     * a redelivery after the restart arrives within that.
     */
    private void settle(PeerChecker checker, String system, long quietNanos) {
        long committed = BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM peer_commits WHERE system = '"
                + system + "'");
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (System.nanoTime() - end < 0
                && (checker.distinct() < committed || System.nanoTime() - checker.lastArrival() < quietNanos)) {
            LockSupport.parkNanos(100_000_000L);
        }
    }
}
