package dev.outbox.benchmarks;

import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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
 * <p>
 * This class owns the run: its options and environment, the sequence numbers its runs take, the CPU meter, the
 * results and the printed settings; the work is done by {@link PeerLatencyLines}, {@link PeerDrains} and
 * {@link PeerCrashRuns}, with each peer's settings and child JVM from {@link PeerSetup} and its writers from
 * {@link PeerWriters}; the table is {@link PeerReport}'s.
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
    private long seqBase = 1;
    private final ServerCpu serverCpu;
    /** The running peer's child JVM, whose CPU time counts with this JVM's and the database server's. */
    private volatile PeerChild current;
    private final PeerLatencyLines peerLines;
    private final PeerDrains peerDrains;
    private final PeerCrashRuns peerCrashes;

    /**
     * @param drainRows    --drain-rows: the Debezium drain runs right after its latency lines, on the same slot (one
     *                     start fewer)
     * @param fastFailover --crash-fast-failover: our crash run with the take-over scenario's fast timings (the smoke
     *                     test)
     */
    private PeerBenchmark(BenchEnvironment env, BenchmarkOptions options, int drainRows, boolean fastFailover) {
        this.env = env;
        this.serverCpu = ServerCpu.of(env.database());
        PeerSetup setup = new PeerSetup(env, options, settings, child -> current = child);
        this.peerDrains = new PeerDrains(env, options, setup, drains, settings, this::sequences,
                this::processSeconds);
        this.peerLines = new PeerLatencyLines(env, options, setup, peerDrains, drainRows, lines, settings,
                this::sequences, this::processSeconds);
        this.peerCrashes = new PeerCrashRuns(env, options, fastFailover, setup, crashes, settings, this::sequences);
    }

    /** Takes {@code n} sequence numbers for a run (every run's records have numbers of their own): the first. */
    private long sequences(long n) {
        long base = seqBase;
        seqBase += n;
        return base;
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
            PeerBenchmark b = new PeerBenchmark(env, options, drainRows, fastFailover);
            b.createTables();
            for (String system : systems) {
                if (latencyLines) {
                    b.peerLines.run(system);
                }
            }
            if (drainRows > 0 && (latencyLines || !crashRuns)) {
                for (String system : systems) {
                    b.peerDrains.drain(system, drainRows);
                }
            }
            if (crashSeconds > 0 && crashRuns) {
                for (String system : systems) {
                    b.peerCrashes.crash(system, crashRate, crashSeconds);
                }
            }
            b.text = new PeerReport(b, options).render(started, loadAtStart, systems);
            Files.createDirectories(options.out);
            Files.writeString(options.out.resolve("results-peers.txt"), b.text);
            Progress.say("results written to %s", options.out.toAbsolutePath().resolve("results-peers.txt"));
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
}
