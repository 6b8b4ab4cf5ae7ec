package dev.outbox.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.LongUnaryOperator;

/**
 * The backlog drains of the peers' run ({@link PeerBenchmark}): a backlog of {@code rows} records drained: ours by
 * the benchmark's {@code drain} and {@code drain-wal} scenarios (the Dispatcher started on a full table, or a full
 * slot), the cursor's followed by the {@link BarePipeline}'s; Debezium started on {@code rows} outbox rows inserted
 * while it was stopped (its slot holds them), from its start (startup included) and from its first record to its
 * last; Modulith restarted on {@code rows} publications left incomplete by a killed application
 * ({@link ModulithDrain}).
 */
final class PeerDrains {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final PeerSetup setup;
    private final List<PeerBenchmark.Drain> drains;
    private final Map<String, List<String[]>> settings;
    private final LongUnaryOperator sequences;
    private final DoubleSupplier processSeconds;
    /** Debezium's drain ran already (right after its latency lines, on the same slot). */
    private boolean debeziumDrained;

    /**
     * @param drains         the run's drains, added to
     * @param settings       the run's printed settings, added to
     * @param sequences      takes that many sequence numbers of the run's and returns the first
     * @param processSeconds the CPU seconds of the run's processes (this JVM, the running child, Postgres)
     */
    PeerDrains(BenchEnvironment env, BenchmarkOptions options, PeerSetup setup, List<PeerBenchmark.Drain> drains,
               Map<String, List<String[]>> settings, LongUnaryOperator sequences, DoubleSupplier processSeconds) {
        this.env = env;
        this.options = options;
        this.setup = setup;
        this.drains = drains;
        this.settings = settings;
        this.sequences = sequences;
        this.processSeconds = processSeconds;
    }

    /** The drain of a backlog of {@code rows} records by {@code system} (Debezium's: unless it ran already). */
    void drain(String system, int rows) throws Exception {
        switch (system) {
            case "cursor", "wal" -> {
                Progress.say("%s drain of %,d rows ...", system, rows);
                ThroughputScenarios throughput = new ThroughputScenarios(env, options);
                double proc0 = processSeconds.getAsDouble();
                ThroughputScenarios.Run r = system.equals("wal") ? throughput.drainWal(rows, options.seed)
                        : throughput.drain(rows, options.seed);
                double proc = processSeconds.getAsDouble() - proc0;
                drains.add(new PeerBenchmark.Drain(system, r.records(), r.seconds(), Double.NaN, r.left(),
                        proc * 1e6 / Math.max(1, r.records()), Machine.loadAverage()));
                if (system.equals("cursor")) {
                    Progress.say("cursor drain: %,d records in %.2f s, %,.0f records/s; bare pipeline of %,d rows ...",
                            r.records(), r.seconds(), r.rate(), rows);
                    ThroughputScenarios.settle();
                    double b0 = processSeconds.getAsDouble();
                    double[] bare = BarePipeline.run(env, options, rows);
                    double b = processSeconds.getAsDouble() - b0;
                    drains.add(new PeerBenchmark.Drain("bare", (long) bare[0], bare[1], Double.NaN, (long) bare[2],
                            b * 1e6 / Math.max(1, bare[0]), Machine.loadAverage()));
                }
            }
            case "debezium" -> {
                if (!debeziumDrained) {
                    drainDebezium(rows, setup.freshDebezium("peer-debezium-drain-offsets.dat"), true);
                }
            }
            case "modulith" -> {
                settings.putIfAbsent("modulith", setup.modulithSettings());
                long base = sequences.applyAsLong(rows);
                drains.add(new ModulithDrain(env, options, setup::startModulith, processSeconds).run(rows, base));
            }
            default -> {
                return;
            }
        }
        if (!system.equals("debezium") && !system.equals("modulith")) {
            PeerBenchmark.Drain d = drains.get(drains.size() - 1); // the bare pipeline's, after the cursor drain
            Progress.say("%s drain: %,d records in %.2f s, %,.0f records/s, %d left", d.system(), d.records(),
                    d.seconds(), d.rate(), d.left());
        }
        ThroughputScenarios.settle();
    }

    /**
     * Debezium's drain: {@code rows} outbox rows inserted while it is stopped (its slot keeps them), then started.
     * With {@code fresh}, a new connector is started and stopped first, to create its slot.
     */
    void drainDebezium(int rows, Map<String, String> props, boolean fresh) throws Exception {
        Progress.say("debezium drain of %,d rows in its slot ...", rows);
        debeziumDrained = true;
        String topic = env.newTopic("debezium-drain");
        if (fresh) {
            try (PeerChild child = setup.startDebezium(props)) {
                Progress.say("debezium started (pid %d) and stopped: its slot keeps what comes next", child.pid());
            }
        }
        long base = sequences.applyAsLong(rows);
        BenchEnvironment.execute(env.pool(), "INSERT INTO peer_outbox SELECT gen_random_uuid(), '" + topic + "',"
                + " 'w0-' || (i % " + PeerBenchmark.KEYS_PER_WRITER + "), 'bench', int8send(i) || decode(repeat('00', "
                + Math.max(0, options.valueBytes - 8) + "), 'hex') FROM generate_series(" + base + ", "
                + (base + rows - 1) + ") AS i");
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, rows).start();
        double proc0 = processSeconds.getAsDouble();
        long started = System.nanoTime();
        long firstArrival;
        try (PeerChild child = setup.startDebezium(props)) {
            checker.awaitDistinct(rows, Duration.ofMinutes(5));
            double proc = processSeconds.getAsDouble() - proc0;
            checker.stop();
            firstArrival = Long.MAX_VALUE;
            for (int i = 0; i < rows; i++) {
                long t = checker.consumed.get(i);
                if (t != 0) {
                    firstArrival = Math.min(firstArrival, t);
                }
            }
            drains.add(new PeerBenchmark.Drain("debezium", checker.distinct(),
                    (checker.lastArrival() - firstArrival) / 1e9, (firstArrival - started) / 1e9,
                    rows - checker.distinct(), proc * 1e6 / rows, Machine.loadAverage()));
        }
        PeerBenchmark.Drain d = drains.get(drains.size() - 1);
        Progress.say("debezium drain: %,d records in %.2f s, %,.0f records/s, first after %.1f s, %d left",
                d.records(), d.seconds(), d.rate(), d.startSeconds(), d.left());
        if (fresh) {
            setup.dropDebeziumSlot();
        }
    }
}
