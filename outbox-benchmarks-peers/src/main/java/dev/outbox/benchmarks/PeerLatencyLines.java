package dev.outbox.benchmarks;

import org.HdrHistogram.Histogram;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.DoubleSupplier;
import java.util.function.LongUnaryOperator;

/**
 * The latency lines of the peers' run ({@link PeerBenchmark}), one a system and offered rate: ours by the
 * benchmark's own latency and latency-wal scenarios (in this JVM); each peer's by its {@link PeerWriters} at the
 * rate for the warm-up and the measured duration, with the {@link PeerChecker} on a topic of the line's own (commit
 * to consume, missing records, sustainable or not), after a JIT warm-up at 1,000 records/s that is not recorded.
 * Debezium's backlog drain (with --drain-rows) follows its lines, on the same slot.
 */
final class PeerLatencyLines {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final PeerSetup setup;
    private final PeerWriters writers;
    private final PeerDrains drains;
    private final int drainRows;
    private final List<PeerBenchmark.Line> lines;
    private final Map<String, List<String[]>> settings;
    private final LongUnaryOperator sequences;
    private final DoubleSupplier processSeconds;

    /**
     * @param drains         runs Debezium's drain right after its lines
     * @param drainRows      --drain-rows: that drain's size (0: none)
     * @param lines          the run's latency lines, added to
     * @param settings       the run's printed settings, added to
     * @param sequences      takes that many sequence numbers of the run's and returns the first
     * @param processSeconds the CPU seconds of the run's processes (this JVM, the running child, Postgres)
     */
    PeerLatencyLines(BenchEnvironment env, BenchmarkOptions options, PeerSetup setup, PeerDrains drains,
                     int drainRows, List<PeerBenchmark.Line> lines, Map<String, List<String[]>> settings,
                     LongUnaryOperator sequences, DoubleSupplier processSeconds) {
        this.env = env;
        this.options = options;
        this.setup = setup;
        this.writers = new PeerWriters(env, options);
        this.drains = drains;
        this.drainRows = drainRows;
        this.lines = lines;
        this.settings = settings;
        this.sequences = sequences;
        this.processSeconds = processSeconds;
    }

    /** The latency lines of {@code system}, one of {@link PeerBenchmark#SYSTEMS}, at every rate of --rates. */
    void run(String system) throws Exception {
        switch (system) {
            case "cursor", "wal" -> ours(system);
            case "modulith" -> modulith();
            case "debezium" -> debezium();
            default -> throw new IllegalArgumentException("unknown system " + system + "; one of "
                    + PeerBenchmark.SYSTEMS);
        }
    }

    private void ours(String system) throws Exception {
        Map<String, Object> producer = env.producerProperties();
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"harvest", system.equals("wal") ? "WAL (logical decoding, slot)" : "cursor (table)",
                "the benchmark's latency / latency-wal scenario"});
        s.add(new String[] {"DispatcherConfig", env.dispatcherConfig().toString(), "the benchmark's options"});
        producer.forEach((k, v) -> s.add(new String[] {"producer " + k, String.valueOf(v),
                "KafkaMessageBroker's enforced values and defaults (BenchEnvironment.producerProperties)"}));
        s.add(new String[] {"writers", options.writers + " threads, Publisher.committed() after each commit",
                "as the Spring Boot starter does"});
        settings.put(system, s);
        if (!options.latencyJitWarmup.isZero() && system.equals("cursor")) {
            Progress.say("latency warm-up of the Dispatcher (not recorded) ...");
            LatencyScenario.warmUp(env, options);
        }
        LatencyScenario latency = new LatencyScenario(env, options);
        for (int rate : options.rates) {
            Progress.say("%s at %,d records/s ...", system, rate);
            double cpu0 = CpuMeter.machineBusySeconds();
            double proc0 = processSeconds.getAsDouble();
            LatencyScenario.Result r = system.equals("wal") ? latency.runWal(rate) : latency.run(rate);
            double cpu = CpuMeter.machineBusySeconds() - cpu0;
            double proc = processSeconds.getAsDouble() - proc0;
            lines.add(new PeerBenchmark.Line(system, rate, r.achievedRate(), r.commitToAck().p50(),
                    r.commitToAck().p99(), r.commitToConsume().p50(), r.commitToConsume().p99(),
                    r.commitToConsume().max(), r.measured(), r.unacknowledged(),
                    r.sustainable() && r.writersKeptUp(), perRecord(cpu, rate), perRecord(proc, rate),
                    Machine.loadAverage()));
            say(lines.get(lines.size() - 1));
            ThroughputScenarios.settle();
        }
    }

    private void modulith() throws Exception {
        settings.put("modulith", setup.modulithSettings());
        BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS event_publication");
        try (PeerChild child = setup.startModulith()) {
            Writers modulith = (topic, rate, start, end, base, committed) ->
                    writers.modulith(child, topic, rate, start, end, base, committed);
            warmUp("modulith", modulith);
            for (int rate : options.rates) {
                Progress.say("modulith at %,d records/s ...", rate);
                peerLine("modulith", rate, modulith);
                ThroughputScenarios.settle();
            }
        }
    }

    private void debezium() throws Exception {
        Map<String, String> props = setup.freshDebezium("peer-debezium-offsets.dat");
        try (PeerChild child = setup.startDebezium(props)) {
            warmUp("debezium", writers::debezium);
            for (int rate : options.rates) {
                Progress.say("debezium at %,d records/s ...", rate);
                peerLine("debezium", rate, writers::debezium);
                ThroughputScenarios.settle();
            }
        }
        if (drainRows > 0) {
            drains.drainDebezium(drainRows, props, false);
        }
        setup.dropDebeziumSlot();
    }

    @FunctionalInterface
    private interface Writers {
        /** Writes from start to end (nanoTime) at rate; commit times into committed at seq - base; returns count. */
        long run(String topic, int rate, long start, long end, long base, AtomicLongArray committed)
                throws Exception;
    }

    private void warmUp(String system, Writers peer) throws Exception {
        if (options.latencyJitWarmup.isZero()) {
            return;
        }
        Progress.say("%s warm-up: %s at 1,000 records/s (not recorded) ...", system, options.latencyJitWarmup);
        String topic = env.newTopic(system + "-warmup");
        long start = System.nanoTime() + 300_000_000L;
        long end = start + options.latencyJitWarmup.toNanos();
        AtomicLongArray committed = new AtomicLongArray(PeerWriters.capacity(1_000, end - start));
        long base = sequences.applyAsLong(committed.length());
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, committed.length())
                .start();
        long n = peer.run(topic, 1_000, start, end, base, committed);
        checker.awaitDistinct(n, Duration.ofSeconds(30));
        checker.stop();
        ThroughputScenarios.settle();
    }

    private void peerLine(String system, int rate, Writers peer) throws Exception {
        String topic = env.newTopic(system + "-" + rate);
        long warm = options.latencyWarmup.toNanos();
        long start = System.nanoTime() + 500_000_000L;
        long end = start + warm + options.duration.toNanos();
        AtomicLongArray committed = new AtomicLongArray(PeerWriters.capacity(rate, end - start));
        long base = sequences.applyAsLong(committed.length());
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, committed.length())
                .start();
        double cpu0 = CpuMeter.machineBusySeconds();
        double proc0 = processSeconds.getAsDouble();
        long n = peer.run(topic, rate, start, end, base, committed);
        long writersDone = System.nanoTime();
        checker.awaitDistinct(n, Duration.ofSeconds(Math.max(30, (long) (options.duration.toSeconds() * 1.5))));
        double cpu = CpuMeter.machineBusySeconds() - cpu0;
        double proc = processSeconds.getAsDouble() - proc0;
        checker.stop();
        double tail = (checker.lastArrival() - writersDone) / 1e9;
        Histogram toConsume = LatencyScenario.histogram();
        long measured = 0;
        long missing = 0;
        long inWindow = 0;
        for (int i = 0; i < committed.length(); i++) {
            long c = committed.get(i);
            if (c == 0 || c < start + warm) {
                continue;
            }
            if (c <= end) {
                inWindow++;
            }
            measured++;
            long r = checker.consumed.get(i);
            if (r == 0) {
                missing++;
            } else {
                LatencyScenario.record(toConsume, r - c);
            }
        }
        LatencyScenario.Stats stats = LatencyScenario.Stats.of(toConsume);
        double achieved = inWindow / (options.duration.toNanos() / 1e9);
        // Sustainable: the writers kept the offered rate, every record arrived, and the last one within 2 s (or
        // a tenth of the run) of the writers' end: a backlog that grew during the run shows as a long tail.
        boolean sustainable = achieved >= 0.95 * rate && missing == 0
                && tail <= Math.max(2.0, options.duration.toNanos() / 1e10);
        PeerBenchmark.Line line = new PeerBenchmark.Line(system, rate, achieved, Double.NaN, Double.NaN,
                stats.p50(), stats.p99(), stats.max(), measured, missing, sustainable, perRecord(cpu, rate),
                perRecord(proc, rate), Machine.loadAverage());
        lines.add(line);
        say(line);
        Progress.say("%s at %,d/s: %,d committed, %,d arrived, %d duplicates, %d out of order, tail %.2f s", system,
                rate, n, checker.distinct(), checker.duplicates(), checker.outOfOrder(), tail);
    }

    private double perRecord(double cpuSeconds, int rate) {
        double seconds = (options.latencyWarmup.toNanos() + options.duration.toNanos()) / 1e9;
        return cpuSeconds * 1e6 / (rate * seconds);
    }

    private static void say(PeerBenchmark.Line l) {
        Progress.say("%s at %,d/s: achieved %,.0f/s, commit->ack p50 %.1f p99 %.1f ms, commit->consume p50 %.1f"
                        + " p99 %.1f ms, %d missing, %s, CPU %.0f us/record (machine %.0f), load %.2f", l.system(),
                l.rate(), l.achieved(), l.ackP50(), l.ackP99(), l.consumeP50(), l.consumeP99(), l.missing(),
                l.sustainable() ? "sustainable" : "NOT sustainable", l.processCpuMicrosPerRecord(),
                l.cpuMicrosPerRecord(), l.load());
    }
}
