package dev.outbox.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The benchmark's flags, parsed from the command line. Every flag has a default; {@code --help} prints them.
 * Immutable after {@link #parse}; not meant to be shared beyond one run.
 */
final class BenchmarkOptions {
    static final Set<String> ALL_SCENARIOS = Set.of("drain", "database", "broker", "naive", "latency", "takeover",
            "inbox");

    int rows = 1_000_000;
    int naiveRows = 20_000;
    Duration naiveTime = Duration.ofSeconds(30);
    int valueBytes = 100;
    int keys = 10_000;
    int partitions = 6;
    int repeat = 3;
    int warmupRows = 100_000;
    List<Integer> rates = List.of(1_000, 5_000, 20_000);
    Duration duration = Duration.ofSeconds(20);
    Duration latencyWarmup = Duration.ofSeconds(5);
    int writers = 4;
    int recordsPerTx; // 0: automatic
    int maxTxRate = 2_000;
    List<String> takeoverModes = List.of("close", "crash");
    int takeoverRepeat = 3;
    int takeoverRate = 1_000;
    Set<String> scenarios = new LinkedHashSet<>(List.of("drain", "database", "broker", "naive", "latency",
            "takeover", "inbox"));
    int markBatchSize = 1_000;
    int maxInFlightRecords = 10_000;
    int purgeBatchSize = 5_000;
    Map<String, String> producer = new LinkedHashMap<>();
    String synchronousCommit = "on";
    String servers = "embedded";
    String database = "postgres";
    String dbUrl;
    String dbUser;
    String dbPassword = "";
    String kafkaBootstrap;
    Path out = Path.of(System.getProperty("bench.out", "target/benchmark"));
    private boolean outDefault = true;
    Duration timeout = Duration.ofMinutes(10);
    long seed = 42;
    String command = System.getProperty("bench.command", "java dev.outbox.benchmarks.Benchmark");
    boolean help;

    static BenchmarkOptions parse(String[] args) {
        BenchmarkOptions o = new BenchmarkOptions();
        StringBuilder cmd = new StringBuilder();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String value = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            }
            if (name.equals("--help") || name.equals("-h")) {
                o.help = true;
                continue;
            }
            if (!name.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'; try --help");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("flag " + name + " needs a value; try --help");
                }
                value = args[++i];
            }
            o.set(name, value);
        }
        if (System.getProperty("bench.command") == null) {
            for (String a : args) {
                cmd.append(' ').append(a);
            }
            o.command = "java dev.outbox.benchmarks.Benchmark" + cmd;
        }
        o.check();
        return o;
    }

    private void set(String name, String value) {
        switch (name) {
            case "--rows" -> rows = positive(name, value);
            case "--naive-rows" -> naiveRows = positive(name, value);
            case "--naive-seconds" -> naiveTime = seconds(name, value, false);
            case "--value-bytes" -> valueBytes = atLeast(name, value, 8);
            case "--keys" -> keys = positive(name, value);
            case "--partitions" -> partitions = positive(name, value);
            case "--repeat" -> repeat = positive(name, value);
            case "--warmup-rows" -> warmupRows = atLeast(name, value, 0);
            case "--rates" -> {
                List<Integer> list = new ArrayList<>();
                for (String s : value.split(",")) {
                    list.add(positive(name, s.trim()));
                }
                rates = List.copyOf(list);
            }
            case "--duration" -> duration = seconds(name, value, false);
            case "--latency-warmup" -> latencyWarmup = seconds(name, value, true);
            case "--writers" -> writers = positive(name, value);
            case "--records-per-tx" -> recordsPerTx = value.equals("auto") ? 0 : positive(name, value);
            case "--max-tx-rate" -> maxTxRate = positive(name, value);
            case "--takeover-modes" -> {
                List<String> list = new ArrayList<>();
                for (String s : value.split(",")) {
                    String m = s.trim().toLowerCase(Locale.ROOT);
                    if (!m.equals("close") && !m.equals("crash")) {
                        throw new IllegalArgumentException(name + " takes close and/or crash, not '" + s + "'");
                    }
                    list.add(m);
                }
                takeoverModes = List.copyOf(list);
            }
            case "--takeover-repeat" -> takeoverRepeat = positive(name, value);
            case "--takeover-rate" -> takeoverRate = positive(name, value);
            case "--scenarios" -> {
                Set<String> set = new LinkedHashSet<>();
                for (String s : value.split(",")) {
                    String sc = s.trim().toLowerCase(Locale.ROOT);
                    if (sc.equals("all")) {
                        set.addAll(List.of("drain", "database", "broker", "naive", "latency", "takeover"));
                    } else if (!ALL_SCENARIOS.contains(sc)) {
                        throw new IllegalArgumentException(name + ": unknown scenario '" + s + "'; known: "
                                + ALL_SCENARIOS);
                    } else {
                        set.add(sc);
                    }
                }
                scenarios = set;
            }
            case "--mark-batch" -> markBatchSize = positive(name, value);
            case "--max-in-flight" -> maxInFlightRecords = positive(name, value);
            case "--purge-batch" -> purgeBatchSize = positive(name, value);
            case "--producer" -> {
                int eq = value.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException(name + " takes name=value, not '" + value + "'");
                }
                producer.put(value.substring(0, eq).trim(), value.substring(eq + 1).trim());
            }
            case "--synchronous-commit" -> {
                String v = value.toLowerCase(Locale.ROOT);
                if (!Set.of("on", "off", "local", "remote_write", "remote_apply", "server").contains(v)) {
                    throw new IllegalArgumentException(name + " takes on, off, local, remote_write, remote_apply"
                            + " or server (keep the server's setting), not '" + value + "'");
                }
                synchronousCommit = v;
            }
            case "--servers" -> {
                String v = value.toLowerCase(Locale.ROOT);
                if (!Set.of("embedded", "docker", "auto").contains(v)) {
                    throw new IllegalArgumentException(name + " takes embedded, docker or auto, not '" + value + "'");
                }
                servers = v;
            }
            case "--database" -> {
                String v = value.toLowerCase(Locale.ROOT);
                if (!Set.of("postgres", "mysql", "mariadb").contains(v)) {
                    throw new IllegalArgumentException(name + " takes postgres, mysql or mariadb, not '" + value + "'");
                }
                database = v;
            }
            case "--db-url" -> dbUrl = value;
            case "--db-user" -> dbUser = value;
            case "--db-password" -> dbPassword = value;
            case "--kafka-bootstrap" -> kafkaBootstrap = value;
            case "--out" -> {
                out = Path.of(value);
                outDefault = false;
            }
            case "--timeout" -> timeout = seconds(name, value, false);
            case "--seed" -> seed = Long.parseLong(value);
            default -> throw new IllegalArgumentException("unknown flag " + name + "; try --help");
        }
    }

    private void check() {
        if (markBatchSize > maxInFlightRecords) {
            throw new IllegalArgumentException("--mark-batch (" + markBatchSize + ") must not exceed --max-in-flight ("
                    + maxInFlightRecords + ")");
        }
        if (dbUrl != null && dbUser == null) {
            throw new IllegalArgumentException("--db-url needs --db-user");
        }
        if (outDefault && !database.equals("postgres")) {
            out = Path.of(out + "-" + database);
        }
        if (scenarios.isEmpty()) {
            throw new IllegalArgumentException("--scenarios selects nothing");
        }
    }

    /** Records per writer transaction at {@code rate}: as given, or enough to stay at most at --max-tx-rate. */
    int recordsPerTx(int rate) {
        if (recordsPerTx > 0) {
            return recordsPerTx;
        }
        return Math.max(1, (rate + maxTxRate - 1) / maxTxRate);
    }

    boolean runs(String scenario) {
        return scenarios.contains(scenario);
    }

    private static int positive(String name, String value) {
        return atLeast(name, value, 1);
    }

    private static int atLeast(String name, String value, int min) {
        int v;
        try {
            v = Integer.parseInt(value.replace("_", "").replace(",", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " takes a whole number, not '" + value + "'", e);
        }
        if (v < min) {
            throw new IllegalArgumentException(name + " must be at least " + min + ", was " + v);
        }
        return v;
    }

    private static Duration seconds(String name, String value, boolean zeroAllowed) {
        double s;
        try {
            s = Double.parseDouble(value.endsWith("s") ? value.substring(0, value.length() - 1) : value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " takes seconds, not '" + value + "'", e);
        }
        if (s < 0 || (!zeroAllowed && s == 0)) {
            throw new IllegalArgumentException(name + " must be " + (zeroAllowed ? "at least 0" : "positive")
                    + " seconds, was " + value);
        }
        return Duration.ofMillis(Math.round(s * 1000));
    }

    static String usage() {
        return """
                Usage: ./bench.sh [flags]     (flags take a value: --rows 100000 or --rows=100000)

                Workload
                  --rows N              backlog drained by the Dispatcher and the ceilings (1000000)
                  --naive-rows N        backlog drained by the naive one-row-at-a-time baseline (20000)
                  --naive-seconds S     stop the naive baseline after this long; its rate stays comparable (30)
                  --value-bytes N       value size (100); --keys N distinct keys, drawn at random (10000)
                  --partitions N        partitions of each benchmark topic (6)
                  --repeat N            runs of each throughput scenario; the table shows the median (3)
                  --warmup-rows N       one unrecorded pass of drain/database/broker first; 0 = none (100000)
                  --scenarios LIST      drain,database,broker,naive,latency,takeover,inbox (all)
                Latency under load
                  --rates LIST          offered records/s, one run each (1000,5000,20000)
                  --duration S          seconds of writing per rate, after the warm-up (20)
                  --latency-warmup S    seconds of writing first, left out of the statistics (5)
                  --writers N           writer threads, one connection each (4)
                  --records-per-tx N    records per writer transaction; auto = ceil(rate / max-tx-rate) (auto)
                  --max-tx-rate N       transactions/s that auto aims not to exceed (2000)
                Take-over
                  --takeover-modes LIST close (Dispatcher.close of the leader) and/or crash (the leader's JVM is
                                        killed with SIGKILL) (close,crash)
                  --takeover-repeat N   runs per mode (3); --takeover-rate N records/s written meanwhile (1000)
                Dispatcher and producer
                  --mark-batch N (1000) --max-in-flight N (10000) --purge-batch N (5000)
                  --producer name=value extra Kafka producer property for the Dispatcher and the ceilings
                                        (repeatable; e.g. --producer compression.type=lz4)
                Servers (embedded by default: the database in a child process, Kafka in this JVM)
                  --database postgres|mysql|mariadb    the store measured (postgres)
                  --servers embedded|docker|auto
                  --db-url URL --db-user U --db-password P   an existing server of that database; the
                                        benchmark drops and creates the database outbox_bench on it
                  --kafka-bootstrap HOST:PORT                an existing Kafka cluster
                  --synchronous-commit on|off|server   Postgres: synchronous_commit of the benchmark database;
                                        MySQL/MariaDB: innodb_flush_log_at_trx_commit 1 (on) or 2 (off),
                                        server-wide (on, like production)
                Output
                  --out DIR             where results.{txt,csv,json} go (outbox-benchmarks/target/benchmark,
                                        or .../benchmark-mysql, .../benchmark-mariadb)
                  --timeout S           give up on one scenario after this long (600)
                  --seed N              random seed for keys and values (42)
                """;
    }
}
