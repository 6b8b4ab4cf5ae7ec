package dev.outbox.benchmarks;

import dev.outbox.benchmarks.peers.PeerLoad;
import dev.outbox.benchmarks.peers.debezium.DebeziumPeer;
import dev.outbox.benchmarks.peers.modulith.ModulithPeer;
import org.HdrHistogram.Histogram;

import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Side by side with what users would pick instead (issue #34): our cursor harvest and WAL harvest (the benchmark's
 * own latency scenarios, in this JVM), Spring Modulith and Debezium (each in a child JVM), on the same embedded
 * Postgres 17 and Kafka, at the same offered rates, the same value size and the same consumer-side checker
 * ({@link PeerChecker}); backlog drains (Modulith's: {@link ModulithDrain}); then a crash run of each system (SIGKILL
 * of the publishing JVM under load, restart; ours: {@link EngineCrash}, with a standby). Run by
 * {@code ./bench.sh --scenarios peers}; takes the benchmark's options (--rates, --duration, --latency-warmup,
 * --latency-jit-warmup, --writers, --value-bytes, --partitions, --out) plus {@code --systems} (any of
 * cursor,wal,modulith,debezium), {@code --crash-rate N} and {@code --crash-seconds S} (0: no crash run),
 * {@code --crash-only} (the crash runs alone), {@code --crash-fast-failover} (our crash runs with the take-over
 * scenario's fast heartbeat and delivery timeouts, for the smoke test), {@code --drain-only} (the backlog drains
 * alone), {@code --drain-rows N} (the backlog drains' size; 0: none).
 */
public final class PeerBenchmark {
    static final List<String> SYSTEMS = List.of("cursor", "wal", "modulith", "debezium");
    /** Keys per writer thread in the peers' runs (per-key order is checkable because a key has one writer). */
    static final int KEYS_PER_WRITER = 250;

    /** One latency line: a system at an offered rate. Latencies in ms; NaN where not observable. */
    record Line(String system, int rate, double achieved, double ackP50, double ackP99, double consumeP50,
                double consumeP99, double consumeMax, long measured, long missing, boolean sustainable,
                double cpuMicrosPerRecord, double processCpuMicrosPerRecord, double load) {
    }

    /** One crash run of a peer. */
    record Crash(String system, long committed, long lost, long duplicates, long outOfOrder, double restartSeconds,
                 double load) {
    }

    /** A backlog drain: records, seconds from the first to the last arrival, and from the start to the first. */
    record Drain(String system, long records, double seconds, double startSeconds, long left,
                 double cpuMicrosPerRecord, double load) {
        double rate() {
            return seconds <= 0 ? 0 : records / seconds;
        }
    }

    final List<Drain> drains = new ArrayList<>();
    final List<Line> lines = new ArrayList<>();
    final List<Crash> crashes = new ArrayList<>();
    final Map<String, List<String[]>> settings = new LinkedHashMap<>();
    String text;

    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Path out;
    private long seqBase = 1;
    /** --drain-rows: the Debezium drain runs right after its latency lines, on the same slot (one start fewer). */
    private int drainRows;
    /** --crash-fast-failover: our crash run with the take-over scenario's fast timings (the smoke test). */
    private boolean fastFailover;
    private final ServerCpu serverCpu;
    /** The running peer's child JVM, whose CPU time counts with this JVM's and the database server's. */
    private volatile PeerChild current;

    private PeerBenchmark(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
        this.out = options.out;
        this.serverCpu = ServerCpu.of(env.database());
    }

    /**
     * CPU seconds of the processes of a run: this JVM (writers of ours and Debezium's, the Dispatcher, the
     * in-process Kafka broker, the checker), the peer's child JVM, and the Postgres server's processes. Unlike the
     * machine's total it leaves out the other builds that share this machine.
     */
    private double processSeconds() {
        double jvm = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
        PeerChild child = current;
        double c = child == null ? 0 : ProcessHandle.of(child.pid()).flatMap(h -> h.info().totalCpuDuration())
                .map(d -> d.toNanos() / 1e9).orElse(0.0);
        return jvm + c + serverCpu.seconds();
    }

    public static void main(String[] args) throws Exception {
        PeerBenchmark b = run(args);
        System.out.print(b.text);
        System.out.flush();
        System.exit(0);
    }

    /** Parses the command line, runs the selected systems and the crash runs, writes results-peers.txt. */
    static PeerBenchmark run(String[] args) throws Exception {
        List<String> rest = new ArrayList<>();
        List<String> systems = SYSTEMS;
        int crashRate = 1_000;
        double crashSeconds = 20;
        boolean ratesGiven = false;
        boolean latencyLines = true;
        int drainRows = 100_000;
        boolean crashRuns = true;
        boolean fastFailover = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--scenarios" -> i++; // "peers"
                case "--systems" -> systems = List.of(args[++i].split(","));
                case "--crash-rate" -> crashRate = Integer.parseInt(args[++i]);
                case "--crash-seconds" -> crashSeconds = Double.parseDouble(args[++i]);
                case "--crash-only" -> latencyLines = false;
                case "--crash-fast-failover" -> fastFailover = true;
                case "--drain-rows" -> drainRows = Integer.parseInt(args[++i]);
                case "--drain-only" -> {
                    latencyLines = false;
                    crashRuns = false;
                }
                default -> {
                    ratesGiven |= args[i].equals("--rates");
                    rest.add(args[i]);
                }
            }
        }
        for (String system : systems) {
            if (!SYSTEMS.contains(system)) {
                throw new IllegalArgumentException("--systems: unknown system '" + system + "'; any of " + SYSTEMS);
            }
        }
        if (!ratesGiven) {
            rest.add("--rates");
            rest.add("10,100,1000,5000");
        }
        rest.add("--scenarios");
        rest.add("latency,latency-wal");
        BenchmarkOptions options = BenchmarkOptions.parse(rest.toArray(String[]::new));
        Instant started = Instant.now();
        double loadAtStart = Machine.loadAverage();
        try (BenchEnvironment env = new BenchEnvironment(options)) {
            PeerBenchmark b = new PeerBenchmark(env, options);
            b.drainRows = drainRows;
            b.fastFailover = fastFailover;
            b.createTables();
            for (String system : systems) {
                if (latencyLines) {
                    b.latency(system);
                }
            }
            if (drainRows > 0 && (latencyLines || !crashRuns)) {
                for (String system : systems) {
                    b.drain(system, drainRows);
                }
            }
            if (crashSeconds > 0 && crashRuns) {
                for (String system : systems) {
                    b.crash(system, crashRate, crashSeconds);
                }
            }
            b.text = new PeerReport(b, options).render(started, loadAtStart, systems);
            Files.createDirectories(b.out);
            Files.writeString(b.out.resolve("results-peers.txt"), b.text);
            Progress.say("results written to %s", b.out.toAbsolutePath().resolve("results-peers.txt"));
            return b;
        }
    }

    private void createTables() {
        BenchEnvironment.execute(env.pool(), "CREATE TABLE IF NOT EXISTS peer_commits(system text NOT NULL,"
                + " seq bigint NOT NULL)");
        // The outbox table of the Debezium outbox event router's documentation.
        BenchEnvironment.execute(env.pool(), "CREATE TABLE IF NOT EXISTS peer_outbox(id uuid PRIMARY KEY,"
                + " aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL,"
                + " type varchar(255) NOT NULL, payload bytea)");
    }

    // ---------------------------------------------------------------------------------------------- latency lines

    private void latency(String system) throws Exception {
        switch (system) {
            case "cursor", "wal" -> ours(system);
            case "modulith" -> modulith();
            case "debezium" -> debezium();
            default -> throw new IllegalArgumentException("unknown system " + system + "; one of " + SYSTEMS);
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
            double proc0 = processSeconds();
            LatencyScenario.Result r = system.equals("wal") ? latency.runWal(rate) : latency.run(rate);
            double cpu = CpuMeter.machineBusySeconds() - cpu0;
            double proc = processSeconds() - proc0;
            lines.add(new Line(system, rate, r.achievedRate(), r.commitToAck().p50(), r.commitToAck().p99(),
                    r.commitToConsume().p50(), r.commitToConsume().p99(), r.commitToConsume().max(), r.measured(),
                    r.unacknowledged(), r.sustainable() && r.writersKeptUp(), perRecord(cpu, rate),
                    perRecord(proc, rate), Machine.loadAverage()));
            say(lines.get(lines.size() - 1));
            ThroughputScenarios.settle();
        }
    }

    private double perRecord(double cpuSeconds, int rate) {
        double seconds = (options.latencyWarmup.toNanos() + options.duration.toNanos()) / 1e9;
        return cpuSeconds * 1e6 / (rate * seconds);
    }

    private static void say(Line l) {
        Progress.say("%s at %,d/s: achieved %,.0f/s, commit->ack p50 %.1f p99 %.1f ms, commit->consume p50 %.1f"
                        + " p99 %.1f ms, %d missing, %s, CPU %.0f us/record (machine %.0f), load %.2f", l.system(),
                l.rate(), l.achieved(), l.ackP50(), l.ackP99(), l.consumeP50(), l.consumeP99(), l.missing(),
                l.sustainable() ? "sustainable" : "NOT sustainable", l.processCpuMicrosPerRecord(),
                l.cpuMicrosPerRecord(), l.load());
    }

    private Map<String, String> childProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("bench.jdbc.url", env.database().jdbcUrl());
        p.put("bench.jdbc.user", env.database().server().username());
        p.put("bench.bootstrap", env.kafka().bootstrapServers());
        return p;
    }

    private PeerChild startModulith() throws Exception {
        PeerChild child = new PeerChild("modulith", ModulithPeer.class.getName(), childProperties(),
                env.database().server().password(), out.resolve("peer-modulith.log"));
        child.await("READY", Duration.ofMinutes(3));
        current = child;
        return child;
    }

    private void modulith() throws Exception {
        settings.put("modulith", modulithSettings());
        BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS event_publication");
        try (PeerChild child = startModulith()) {
            warmUpPeer("modulith", (topic, rate, start, end, base, committed) ->
                    runModulith(child, topic, rate, start, end, base, committed));
            for (int rate : options.rates) {
                Progress.say("modulith at %,d records/s ...", rate);
                peerLine("modulith", rate, (topic, r, start, end, base, committed) ->
                        runModulith(child, topic, r, start, end, base, committed));
                ThroughputScenarios.settle();
            }
        }
    }

    private List<String[]> modulithSettings() {
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"versions", "Spring Modulith 2.0.3, Spring Boot 4.0.7, spring-kafka 4.0.x",
                "the newest spring-modulith-events-kafka this build reaches"});
        s.addAll(ModulithPeer.SETTINGS);
        s.add(new String[] {"writers", options.writers + " threads in the application, TransactionTemplate:"
                + " INSERT peer_commits + publishEvent per record", "Modulith reference, 'Working with Application"
                + " Events'"});
        s.add(new String[] {"drain's backlog", "publications committed while the application's task executor was"
                + " held (externalizations queued, none sent), then SIGKILL; restarted with the settings above",
                "ModulithDrain: the registry's rows are Modulith's own"});
        return s;
    }

    /** Runs the Modulith child's writers and returns how many records they committed. */
    private long runModulith(PeerChild child, String topic, int rate, long start, long end, long base,
                             AtomicLongArray committed) throws Exception {
        Path file = Files.createTempFile("peer-modulith-commits", ".bin");
        try {
            child.send(String.join(" ", "RUN", topic, Integer.toString(rate),
                    Integer.toString(options.recordsPerTx(rate)), Integer.toString(options.writers),
                    Long.toString(start), Long.toString(end), Integer.toString(KEYS_PER_WRITER),
                    Integer.toString(options.valueBytes), Long.toString(options.seed), Long.toString(base),
                    Integer.toString(committed.length()), file.toString()));
            long n = Long.parseLong(child.await("DONE", Duration.ofNanos(end - System.nanoTime())
                    .plusMinutes(2)).substring(5).trim());
            try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(
                    Files.newInputStream(file)))) {
                for (int i = 0; i < committed.length(); i++) {
                    committed.set(i, in.readLong());
                }
            }
            return n;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private Map<String, String> debeziumProperties(Path offsets) {
        Matcher m = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)/([^?]+).*").matcher(env.database().jdbcUrl());
        if (!m.matches()) {
            throw new IllegalStateException("cannot parse " + env.database().jdbcUrl());
        }
        Map<String, String> p = childProperties();
        p.put("bench.db.host", m.group(1));
        p.put("bench.db.port", m.group(2));
        p.put("bench.db.name", m.group(3));
        p.put("bench.offsets", offsets.toAbsolutePath().toString());
        p.put("bench.slot", "peer_debezium");
        String poll = System.getProperty("bench.debezium.pollIntervalMs");
        if (poll != null) {
            p.put("bench.debezium.pollIntervalMs", poll);
        }
        settings.put("debezium", DebeziumPeer.settings(m.group(1), Integer.parseInt(m.group(2)),
                env.database().server().username(), m.group(3), offsets.toString(), "peer_debezium"));
        return p;
    }

    private PeerChild startDebezium(Map<String, String> props) throws Exception {
        PeerChild child = new PeerChild("debezium", DebeziumPeer.class.getName(), props,
                env.database().server().password(), out.resolve("peer-debezium.log"));
        child.await("READY", Duration.ofMinutes(3));
        // The slot exists and streams once it is active.
        long end = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM pg_replication_slots WHERE"
                + " slot_name = 'peer_debezium' AND active") == 0) {
            if (System.nanoTime() - end > 0) {
                throw new IllegalStateException("Debezium's slot never became active");
            }
            LockSupport.parkNanos(100_000_000L);
        }
        current = child;
        return child;
    }

    private void dropDebeziumSlot() {
        BenchEnvironment.execute(env.pool(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name = 'peer_debezium' AND NOT active");
        BenchEnvironment.execute(env.pool(), "DROP PUBLICATION IF EXISTS peer_debezium_pub");
        // A new connector snapshots the table first (snapshot.mode initial): start it on an empty one.
        BenchEnvironment.execute(env.pool(), "TRUNCATE peer_outbox");
    }

    private void debezium() throws Exception {
        Path offsets = out.resolve("peer-debezium-offsets.dat").toAbsolutePath();
        Files.createDirectories(out);
        Files.deleteIfExists(offsets);
        dropDebeziumSlot();
        BenchEnvironment.execute(env.pool(), "TRUNCATE peer_outbox");
        Map<String, String> props = debeziumProperties(offsets);
        try (PeerChild child = startDebezium(props)) {
            warmUpPeer("debezium", this::runDebeziumWriters);
            for (int rate : options.rates) {
                Progress.say("debezium at %,d records/s ...", rate);
                peerLine("debezium", rate, this::runDebeziumWriters);
                ThroughputScenarios.settle();
            }
        }
        if (drainRows > 0) {
            drainDebezium(drainRows, props, false);
        }
        dropDebeziumSlot();
    }

    /** The Debezium run's writers, in this JVM: a row of the outbox table and a business row per record. */
    private long runDebeziumWriters(String topic, int rate, long start, long end, long base,
                                    AtomicLongArray committed) throws Exception {
        AtomicLong sequences = new AtomicLong(base);
        Throwable failure = PeerLoad.run(w -> {
            try {
                Connection c = env.pool().getConnection();
                c.setAutoCommit(false);
                PreparedStatement outbox = c.prepareStatement("INSERT INTO peer_outbox(id, aggregatetype,"
                        + " aggregateid, type, payload) VALUES (?, ?, ?, 'bench', ?)");
                PreparedStatement business = c.prepareStatement("INSERT INTO peer_commits(system, seq)"
                        + " VALUES ('debezium', ?)");
                return new PeerLoad.Tx() {
                    @Override
                    public void close() throws Exception {
                        c.close();
                    }

                    @Override
                    public void commit(String[] keys, long[] seqs, byte[][] values) throws Exception {
                    for (int i = 0; i < seqs.length; i++) {
                        outbox.setObject(1, UUID.randomUUID());
                        outbox.setString(2, topic);
                        outbox.setString(3, keys[i]);
                        outbox.setBytes(4, values[i]);
                        outbox.addBatch();
                        business.setLong(1, seqs[i]);
                        business.addBatch();
                    }
                    business.executeBatch();
                    outbox.executeBatch();
                    c.commit();
                    }
                };
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, options.writers, rate, options.recordsPerTx(rate), start, end, KEYS_PER_WRITER, options.valueBytes,
                options.seed, sequences, base, committed);
        if (failure != null) {
            throw new IllegalStateException("writer failed: " + failure, failure);
        }
        return sequences.get() - base;
    }

    @FunctionalInterface
    private interface Writers {
        /** Writes from start to end (nanoTime) at rate; commit times into committed at seq - base; returns count. */
        long run(String topic, int rate, long start, long end, long base, AtomicLongArray committed)
                throws Exception;
    }

    private void warmUpPeer(String system, Writers writers) throws Exception {
        if (options.latencyJitWarmup.isZero()) {
            return;
        }
        Progress.say("%s warm-up: %s at 1,000 records/s (not recorded) ...", system, options.latencyJitWarmup);
        String topic = env.newTopic(system + "-warmup");
        long start = System.nanoTime() + 300_000_000L;
        long end = start + options.latencyJitWarmup.toNanos();
        long base = seqBase;
        AtomicLongArray committed = new AtomicLongArray(capacity(1_000, end - start));
        seqBase += committed.length();
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, committed.length())
                .start();
        long n = writers.run(topic, 1_000, start, end, base, committed);
        waitFor(checker, n, Duration.ofSeconds(30));
        checker.stop();
        ThroughputScenarios.settle();
    }

    private static int capacity(int rate, long nanos) {
        return (int) Math.min(Integer.MAX_VALUE - 8, (long) Math.ceil(rate * (nanos / 1e9) * 1.2) + 10_000);
    }

    private static long waitFor(PeerChecker checker, long n, Duration timeout) {
        long started = System.nanoTime();
        long end = started + timeout.toNanos();
        while (checker.distinct() < n && System.nanoTime() - end < 0) {
            LockSupport.parkNanos(2_000_000L);
        }
        return System.nanoTime() - started;
    }

    private void peerLine(String system, int rate, Writers writers) throws Exception {
        String topic = env.newTopic(system + "-" + rate);
        long warm = options.latencyWarmup.toNanos();
        long start = System.nanoTime() + 500_000_000L;
        long end = start + warm + options.duration.toNanos();
        long base = seqBase;
        AtomicLongArray committed = new AtomicLongArray(capacity(rate, end - start));
        seqBase += committed.length();
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, committed.length())
                .start();
        double cpu0 = CpuMeter.machineBusySeconds();
        double proc0 = processSeconds();
        long n = writers.run(topic, rate, start, end, base, committed);
        long writersDone = System.nanoTime();
        waitFor(checker, n, Duration.ofSeconds(Math.max(30, (long) (options.duration.toSeconds() * 1.5))));
        double cpu = CpuMeter.machineBusySeconds() - cpu0;
        double proc = processSeconds() - proc0;
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
        Line line = new Line(system, rate, achieved, Double.NaN, Double.NaN, stats.p50(), stats.p99(), stats.max(),
                measured, missing, sustainable, perRecord(cpu, rate), perRecord(proc, rate), Machine.loadAverage());
        lines.add(line);
        say(line);
        Progress.say("%s at %,d/s: %,d committed, %,d arrived, %d duplicates, %d out of order, tail %.2f s", system,
                rate, n, checker.distinct(), checker.duplicates(), checker.outOfOrder(), tail);
    }

    // ---------------------------------------------------------------------------------------------- drains

    /**
     * A backlog of {@code rows} records drained: ours by the benchmark's {@code drain} and {@code drain-wal}
     * scenarios (the Dispatcher started on a full table, or a full slot); Debezium started on {@code rows} outbox
     * rows inserted while it was stopped (its slot holds them), from its start (startup included) and from its
     * first record to its last; Modulith restarted on {@code rows} publications left incomplete by a killed
     * application ({@link ModulithDrain}).
     */
    private void drain(String system, int rows) throws Exception {
        switch (system) {
            case "cursor", "wal" -> {
                Progress.say("%s drain of %,d rows ...", system, rows);
                ThroughputScenarios throughput = new ThroughputScenarios(env, options);
                double proc0 = processSeconds();
                ThroughputScenarios.Run r = system.equals("wal") ? throughput.drainWal(rows, options.seed)
                        : throughput.drain(rows, options.seed);
                double proc = processSeconds() - proc0;
                drains.add(new Drain(system, r.records(), r.seconds(), Double.NaN, r.left(),
                        proc * 1e6 / Math.max(1, r.records()), Machine.loadAverage()));
                if (system.equals("cursor")) {
                    Progress.say("cursor drain: %,d records in %.2f s, %,.0f records/s; bare pipeline of %,d rows ...",
                            r.records(), r.seconds(), r.rate(), rows);
                    ThroughputScenarios.settle();
                    double b0 = processSeconds();
                    double[] bare = BarePipeline.run(env, options, rows);
                    double b = processSeconds() - b0;
                    drains.add(new Drain("bare", (long) bare[0], bare[1], Double.NaN, (long) bare[2],
                            b * 1e6 / Math.max(1, bare[0]), Machine.loadAverage()));
                }
            }
            case "debezium" -> {
                if (!debeziumDrained) {
                    Path offsets = out.resolve("peer-debezium-drain-offsets.dat").toAbsolutePath();
                    Files.deleteIfExists(offsets);
                    dropDebeziumSlot();
                    drainDebezium(rows, debeziumProperties(offsets), true);
                }
            }
            case "modulith" -> {
                settings.putIfAbsent("modulith", modulithSettings());
                long base = seqBase;
                seqBase += rows;
                drains.add(new ModulithDrain(env, options, this::startModulith, this::processSeconds).run(rows, base));
            }
            default -> {
                return;
            }
        }
        if (!system.equals("debezium") && !system.equals("modulith")) {
            Drain d = drains.get(drains.size() - 1); // the bare pipeline's, after the cursor drain
            Progress.say("%s drain: %,d records in %.2f s, %,.0f records/s, %d left", d.system(), d.records(),
                    d.seconds(), d.rate(), d.left());
        }
        ThroughputScenarios.settle();
    }

    private boolean debeziumDrained;

    /**
     * Debezium's drain: {@code rows} outbox rows inserted while it is stopped (its slot keeps them), then started.
     * With {@code fresh}, a new connector is started and stopped first, to create its slot.
     */
    private void drainDebezium(int rows, Map<String, String> props, boolean fresh) throws Exception {
        Progress.say("debezium drain of %,d rows in its slot ...", rows);
        debeziumDrained = true;
        String topic = env.newTopic("debezium-drain");
        if (fresh) {
            try (PeerChild child = startDebezium(props)) {
                Progress.say("debezium started (pid %d) and stopped: its slot keeps what comes next", child.pid());
            }
        }
        long base = seqBase;
        seqBase += rows;
        BenchEnvironment.execute(env.pool(), "INSERT INTO peer_outbox SELECT gen_random_uuid(), '" + topic + "',"
                + " 'w0-' || (i % " + KEYS_PER_WRITER + "), 'bench', int8send(i) || decode(repeat('00', "
                + Math.max(0, options.valueBytes - 8) + "), 'hex') FROM generate_series(" + base + ", "
                + (base + rows - 1) + ") AS i");
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, rows).start();
        double proc0 = processSeconds();
        long started = System.nanoTime();
        long firstArrival;
        try (PeerChild child = startDebezium(props)) {
            waitFor(checker, rows, Duration.ofMinutes(5));
            double proc = processSeconds() - proc0;
            checker.stop();
            firstArrival = Long.MAX_VALUE;
            for (int i = 0; i < rows; i++) {
                long t = checker.consumed.get(i);
                if (t != 0) {
                    firstArrival = Math.min(firstArrival, t);
                }
            }
            drains.add(new Drain("debezium", checker.distinct(), (checker.lastArrival() - firstArrival) / 1e9,
                    (firstArrival - started) / 1e9, rows - checker.distinct(), proc * 1e6 / rows,
                    Machine.loadAverage()));
        }
        Drain d = drains.get(drains.size() - 1);
        Progress.say("debezium drain: %,d records in %.2f s, %,.0f records/s, first after %.1f s, %d left",
                d.records(), d.seconds(), d.rate(), d.startSeconds(), d.left());
        if (fresh) {
            dropDebeziumSlot();
        }
    }

    // ---------------------------------------------------------------------------------------------- crash runs

    /**
     * The crash run: the peer's publishing JVM SIGKILLed halfway through {@code seconds} of load at {@code rate},
     * restarted at once; then every committed record (the business rows of peer_commits, the database's truth) is
     * looked for on the topic.
     */
    private void crash(String system, int rate, double seconds) throws Exception {
        Progress.say("%s crash run: %,d records/s for %.0f s, SIGKILL at half time, restart ...", system, rate,
                seconds);
        String topic = env.newTopic(system + "-crash");
        long half = (long) (seconds * 1e9 / 2);
        long base = seqBase;
        int capacity = capacity(rate, 2 * half) * 2;
        seqBase += capacity;
        AtomicLongArray committed = new AtomicLongArray(capacity);
        PeerChecker checker = new PeerChecker(env.kafka().bootstrapServers(), topic, base, capacity).start();
        BenchEnvironment.execute(env.pool(), "DELETE FROM peer_commits WHERE system = '" + system + "'");
        double restart;
        if (system.equals("modulith")) {
            // Publications left incomplete by a latency line that fell behind would be resubmitted on start.
            BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS event_publication");
            PeerChild first = startModulith();
            long start = System.nanoTime() + 300_000_000L;
            Path file = Files.createTempFile("peer-crash", ".bin");
            first.send(String.join(" ", "RUN", topic, Integer.toString(rate),
                    Integer.toString(options.recordsPerTx(rate)), Integer.toString(options.writers),
                    Long.toString(start), Long.toString(start + 2 * half), Integer.toString(KEYS_PER_WRITER),
                    Integer.toString(options.valueBytes), Long.toString(options.seed), Long.toString(base),
                    "1", file.toString()));
            BenchEnvironment.pause(Duration.ofNanos(start + half - System.nanoTime()));
            first.kill();
            long killed = System.nanoTime();
            Files.deleteIfExists(file);
            // The restarted application resubmits the incomplete publications and its writers go on (new keys'
            // sequence numbers follow the killed run's, so per-key order still holds across the restart).
            try (PeerChild second = startModulith()) {
                restart = (System.nanoTime() - killed) / 1e9;
                long committedBefore = BenchEnvironment.queryLong(env.pool(),
                        "SELECT coalesce(max(seq), 0) FROM peer_commits WHERE system = 'modulith'");
                long s2 = System.nanoTime() + 300_000_000L;
                runModulith(second, topic, rate, s2, s2 + half, committedBefore + 1, new AtomicLongArray(1));
                settle(checker, system, quiet(seconds));
            }
        } else if (system.equals("cursor") || system.equals("wal")) {
            EngineCrash engine = new EngineCrash(env, options, out, fastFailover);
            settings.put(system + " (crash run)", engine.settings(system));
            restart = engine.run(system, topic, rate, half, base, committed, checker,
                    () -> settle(checker, system, quiet(seconds)));
            Progress.say("%s crash run: after the kill, %s led", system, engine.takenOverBy);
        } else {
            Path offsets = out.resolve("peer-debezium-crash-offsets.dat").toAbsolutePath();
            Files.deleteIfExists(offsets);
            dropDebeziumSlot();
            Map<String, String> props = debeziumProperties(offsets);
            PeerChild first = startDebezium(props);
            long start = System.nanoTime() + 300_000_000L;
            Thread writers = new Thread(() -> {
                try {
                    runDebeziumWriters(topic, rate, start, start + 2 * half, base, committed);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "peer-crash-writers");
            writers.start();
            BenchEnvironment.pause(Duration.ofNanos(start + half - System.nanoTime()));
            first.kill();
            long killed = System.nanoTime();
            try (PeerChild second = startDebezium(props)) {
                restart = (System.nanoTime() - killed) / 1e9;
                writers.join();
                settle(checker, system, quiet(seconds));
            }
            dropDebeziumSlot();
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
        Crash result = new Crash(system, total, lost, checker.duplicates(), checker.outOfOrder(), restart,
                Machine.loadAverage());
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
