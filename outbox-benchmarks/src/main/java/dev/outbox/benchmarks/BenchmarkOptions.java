package dev.outbox.benchmarks;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The benchmark's command line, parsed by picocli: every option has a default, which {@code --help} shows; an
 * unknown or misspelt option is named, with the closest known ones. Not thread-safe; not meant to be shared beyond
 * one run.
 */
@Command(name = "./bench.sh", mixinStandardHelpOptions = true, versionProvider = BenchmarkOptions.Version.class,
        sortOptions = false, usageHelpAutoWidth = true, showDefaultValues = true,
        description = "Measures the Dispatcher's drain rate next to the database and broker ceilings and the naive"
                + " baseline, latency under a fixed offered load, and take-over. Writes"
                + " results.{txt,csv,json}. Values: --rows 100000 or --rows=100000; seconds as 20, 1.5 or 20s."
                + " The MySQL headers column codec is measured apart: ./bench.sh headers-codec.")
final class BenchmarkOptions implements Callable<Integer> {
    static final List<String> ALL_SCENARIOS = List.of("writer-cost", "drain", "drain-txn", "drain-eos", "drain-unfenced", "drain-mark", "drain-wal",
            "drain-handlers", "drain-rabbitmq", "drain-shards", "drain-shards-2", "database", "cursor", "wal-ceiling",
            "broker", "broker-rabbitmq", "naive", "latency", "latency-txn", "latency-eos", "latency-wal", "latency-handlers", "latency-rabbitmq", "latency-poll",
            "latency-mark", "poison", "takeover", "takeover-shards", "inbox");
    /** The scenarios of the WAL harvest: Postgres only ({@code all} leaves them out on MySQL and MariaDB). */
    static final List<String> WAL_SCENARIOS = List.of("writer-cost", "drain-wal", "wal-ceiling", "latency-wal");
    /** The poison scenario's offered rate and healthy keys: one failing key among 1,000 at 5,000 records/s. */
    static final int POISON_RATE = 5_000;
    static final int POISON_HEALTHY_KEYS = 1_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--rows", paramLabel = "N", description = "Backlog drained by the Dispatcher and the ceilings.")
    int rows = 1_000_000;
    @Option(names = "--naive-rows", paramLabel = "N",
            description = "Backlog drained by the naive one-row-at-a-time baseline.")
    int naiveRows = 20_000;
    @Option(defaultValue = "30", names = "--naive-seconds", paramLabel = "S", converter = Seconds.class,
            description = "Stop the naive baseline after this long; its rate stays comparable.")
    Duration naiveTime;
    @Option(names = "--value-bytes", paramLabel = "N", description = "Value size, at least 8.")
    int valueBytes = 100;
    @Option(names = "--keys", paramLabel = "N", description = "Distinct keys, drawn at random.")
    int keys = 10_000;
    @Option(names = "--partitions", paramLabel = "N", description = "Partitions of each benchmark topic.")
    int partitions = 6;
    @Option(names = "--shards", paramLabel = "N", description = "Shards of the drain-shards scenarios' table.")
    int shards = 4;
    @Option(names = "--repeat", paramLabel = "N",
            description = "Runs of each throughput scenario; the table shows the median.")
    int repeat = 3;
    @Option(names = "--warmup-rows", paramLabel = "N",
            description = "One unrecorded pass of each selected throughput scenario first; 0 = none.")
    int warmupRows = 100_000;
    @Option(defaultValue = "all", names = "--scenarios", paramLabel = "LIST", split = ",",
            converter = Scenario.class,
            description = "Any of writer-cost,drain,drain-txn,drain-eos,drain-unfenced,drain-mark,drain-nopurge,drain-latest-only,drain-wal,"
                    + "drain-handlers,drain-rabbitmq,drain-shards,drain-shards-2,database,cursor,broker-rabbitmq,"
                    + "wal-ceiling,broker,naive,latency,latency-txn,latency-eos,latency-wal,latency-handlers,latency-rabbitmq,latency-poll,"
                    + "latency-mark,latency-shards,"
                    + "poison,takeover,"
                    + "takeover-shards,inbox, or"
                    + " all. drain and latency use the cursor harvest with commit wake-ups, latency-poll the same"
                    + " polling (no wake-ups, the producer lingering), drain-unfenced the cursor harvest with storage"
                    + " fencing off (its cost: next to drain), drain-txn and latency-txn the same with Kafka's"
                    + " transactional producer (broker fencing; its cost: next to drain and latency), drain-eos and"
                    + " latency-eos the same publishing exactly once (its cost: next to drain-txn and latency-txn), drain-mark and latency-mark"
                    + " the mark harvest, drain-wal"
                    + " and latency-wal the WAL harvest (Postgres); drain-handlers and latency-handlers the cursor"
                    + " harvest into in-process handlers (HandlerMessageBroker, a handler doing nothing) instead of"
                    + " Kafka; drain-rabbitmq the cursor drain into RabbitMQ (publisher confirms, a per-key"
                    + " topology), latency-rabbitmq the latency scenario into it (read back from the queues), and"
                    + " broker-rabbitmq the node's ceiling (a bare publisher with confirms);"
                    + " drain-latest-only the cursor drain of latest-only messages (superseded ones purged"
                    + " unsent; not in all);"
                    + " drain-nopurge is the cursor drain with every purge"
                    + " skipped (an upper bound on what a cheaper purge could give; not in all); wal-ceiling is the WAL"
                    + " stream read and confirmed with no broker; writer-cost is the"
                    + " writer's commits/s with an INSERT vs a WAL emit (Postgres); drain-shards is the cursor drain of"
                    + " a table of --shards shards by one Dispatcher leading them all, drain-shards-2 the same by two"
                    + " Dispatchers in this JVM, their shards spread by Kafka's group coordinator (Postgres and MySQL);"
                    + " latency-shards is latency with the table in --shards shards led by one Dispatcher (not in all);"
                    + " takeover-shards kills one of three Dispatcher JVMs sharing six shards and compares the other"
                    + " shards' commit->ack latency with a quiet window.")
    Set<String> scenarios;
    @Option(defaultValue = "5", names = "--writer-cost-seconds", paramLabel = "S", converter = Seconds.class,
            description = "writer-cost: seconds per cell (publisher x synchronous_commit x messages per transaction),"
                    + " --repeat rounds after a warm-up round.")
    Duration writerCostTime;
    @Option(defaultValue = "1000,5000,20000", names = "--rates", paramLabel = "LIST", split = ",",
            description = "Latency: offered records/s, one run each.")
    List<Integer> rates;
    @Option(defaultValue = "20", names = "--duration", paramLabel = "S", converter = Seconds.class,
            description = "Latency: seconds of writing per rate, after the warm-up.")
    Duration duration;
    @Option(defaultValue = "5", names = "--latency-warmup", paramLabel = "S", converter = Seconds.class,
            description = "Latency: seconds of writing first, left out of the statistics; may be 0.")
    Duration latencyWarmup;
    @Option(defaultValue = "5", names = "--latency-jit-warmup", paramLabel = "S", converter = Seconds.class,
            description = "Latency: before the first latency run, S seconds at 5,000 and S at 100 records/s through"
                    + " the table harvest, not recorded, so that the code a low rate runs is compiled (a cold JVM"
                    + " measures its interpreter: the first 10 records/s run was 3-4 ms slower); 0 to skip.")
    Duration latencyJitWarmup;
    @Option(names = "--writers", paramLabel = "N", description = "Latency: writer threads, one connection each.")
    int writers = 4;
    @Option(names = "--records-per-tx", paramLabel = "N|auto", converter = RecordsPerTx.class,
            description = "Latency: records per writer transaction; auto = ceil(rate / max-tx-rate).",
            defaultValue = "auto")
    int recordsPerTx; // 0: automatic
    @Option(names = "--max-tx-rate", paramLabel = "N", description = "Transactions/s that auto aims not to exceed.")
    int maxTxRate = 2_000;
    @Option(defaultValue = "close,crash", names = "--takeover-modes", paramLabel = "LIST", split = ",",
            converter = TakeoverMode.class,
            description = "close (Dispatcher.close of the leader) and/or crash (the leader's JVM is killed with"
                    + " SIGKILL).")
    List<String> takeoverModes;
    @Option(defaultValue = "kafka,database", names = "--elections", paramLabel = "LIST", split = ",",
            converter = Election.class,
            description = "takeover and takeover-shards: the leader elections to take over with, each in the same"
                    + " run: kafka (KafkaLeaderTransport / KafkaShardedLeaderTransport, a consumer group) and/or"
                    + " database (SqlLeaderTransport / SqlShardedLeaderTransport, a lease table next to the outbox).")
    List<String> elections;
    @Option(names = "--takeover-repeat", paramLabel = "N", description = "Take-over runs per mode.")
    int takeoverRepeat = 3;
    @Option(names = "--takeover-rate", paramLabel = "N", description = "Records/s written during a take-over.")
    int takeoverRate = 1_000;
    @Option(defaultValue = "15", names = "--takeover-window", paramLabel = "S", converter = Seconds.class,
            description = "takeover-shards: seconds of the quiet window, and of the window after the kill.")
    Duration takeoverWindow;
    @Option(defaultValue = "30", names = "--takeover-warmup", paramLabel = "S", converter = Seconds.class,
            description = "takeover-shards: seconds of writing before the quiet window (the three dispatcher JVMs'"
                    + " JIT on the machine's cores); may be 0.")
    Duration takeoverWarmup;
    @Option(names = "--mark-batch", paramLabel = "N", description = "Dispatcher: rows per mark.")
    int markBatchSize = 1_000;
    @Option(names = "--max-in-flight", paramLabel = "N", description = "Dispatcher: records in flight at most.")
    int maxInFlightRecords = 10_000;
    @Option(names = "--purge-batch", paramLabel = "N", description = "Dispatcher: ids per purge.")
    int purgeBatchSize = 5_000;
    @Option(names = "--producer", paramLabel = "NAME=VALUE",
            showDefaultValue = CommandLine.Help.Visibility.NEVER,
            description = "Extra Kafka producer property for the Dispatcher and the ceilings (repeatable; e.g."
                    + " --producer compression.type=lz4). Default: none.")
    Map<String, String> producer = new LinkedHashMap<>();
    @Option(names = "--database", paramLabel = "postgres|mysql|mariadb", converter = Database.class,
            description = "The store measured.")
    String database = "postgres";
    @Option(names = "--servers", paramLabel = "embedded|docker|auto", converter = Servers.class,
            description = "Where the servers come from (embedded: the database in a child process, Kafka in this"
                    + " JVM).")
    String servers = "embedded";
    @Option(names = "--db-url", paramLabel = "URL", description = "An existing server of that database; the"
            + " benchmark drops and creates the database outbox_bench on it. Default: none (embedded).")
    String dbUrl;
    @Option(names = "--db-user", paramLabel = "USER", description = "User for --db-url. Default: none.")
    String dbUser;
    @Option(names = "--db-password-file", paramLabel = "FILE", description = "A file holding the password for"
            + " --db-url (its first line). Default: the environment variable " + PASSWORD_VARIABLE + ", else empty."
            + " A password is never taken from the command line, written to the results, or passed to a child JVM"
            + " on its command line.")
    Path dbPasswordFile;
    /** Refused with a message saying where a password goes instead; hidden from {@code --help}. */
    @Option(names = "--db-password", hidden = true, paramLabel = "PASSWORD")
    String dbPasswordOnCommandLine;
    /** The password for --db-url, resolved by {@link #check()} from the file or the environment. */
    String dbPassword = "";
    /** The environment the password variable is read from; tests give their own. */
    Map<String, String> environment = System.getenv();
    @Option(names = "--kafka-bootstrap", paramLabel = "HOST:PORT",
            description = "An existing Kafka cluster. Default: none (embedded).")
    String kafkaBootstrap;
    @Option(names = "--synchronous-commit", paramLabel = "on|off|server|...", converter = SynchronousCommit.class,
            description = "Postgres: synchronous_commit of the benchmark database (also local, remote_write,"
                    + " remote_apply); MySQL/MariaDB: innodb_flush_log_at_trx_commit 1 (on) or 2 (off), server-wide;"
                    + " server keeps the server's setting.")
    String synchronousCommit = "on";
    @Option(names = "--jdbc-options", paramLabel = "K=V&K=V",
            description = "MySQL/MariaDB: Connector/J properties appended to the store's JDBC URL (e.g."
                    + " useServerPrepStmts=true&cachePrepStmts=true). Default: none (the benchmark adds only"
                    + " rewriteBatchedStatements=true, which the store's statements do not use).")
    String jdbcOptions = "";
    @Option(names = "--server-setting", paramLabel = "NAME=VALUE",
            description = "MySQL/MariaDB: a global server variable set before the run (SET GLOBAL NAME = VALUE;"
                    + " repeatable; e.g. innodb_redo_log_capacity=104857600). Reported with the settings.")
    List<String> serverSettings = new java.util.ArrayList<>();
    @Option(defaultValue = "${sys:bench.out:-target/benchmark}", names = "--out", paramLabel = "DIR",
            description = "Where results.{txt,csv,json} go; with --database mysql or mariadb, -mysql or -mariadb is"
                    + " appended to the default.")
    Path out;
    @Option(defaultValue = "600", names = "--timeout", paramLabel = "S", converter = Seconds.class,
            description = "Give up on one scenario after this long.")
    Duration timeout;
    @Option(names = "--seed", paramLabel = "N", description = "Random seed for keys and values.")
    long seed = 42;

    /** The environment variable holding the password for --db-url (unless --db-password-file is given). */
    static final String PASSWORD_VARIABLE = "OUTBOX_DB_PASSWORD";
    /** A password in a JDBC URL: a {@code password=} parameter, or {@code user:password@} before the host. */
    static final java.util.regex.Pattern URL_PASSWORD =
            java.util.regex.Pattern.compile("(?i)[?&;]password=|//[^/?#@]*:[^/?#@]*@");
    /** What results show for a password that is set. */
    static final String MASK = "***";

    String command = System.getProperty("bench.command", "java dev.outbox.benchmarks.Benchmark");

    /** The command line for these options: a usage error prints {@link #usageError} and exits with 2. */
    static CommandLine commandLine(BenchmarkOptions options) {
        return new CommandLine(options).setUsageHelpLongOptionsMaxWidth(32)
                .setParameterExceptionHandler(BenchmarkOptions::usageError);
    }

    /** A usage error: what is wrong, the options picocli finds closest to a misspelt one, where to look. */
    private static int usageError(ParameterException e, String[] args) {
        PrintWriter err = e.getCommandLine().getErr();
        err.println(e.getMessage());
        List<String> near = e instanceof UnmatchedArgumentException u ? u.getSuggestions() : List.of();
        err.println((near.isEmpty() ? "" : "Did you mean " + String.join(" or ", near) + "? ")
                + "./bench.sh --help lists every option with its default.");
        return CommandLine.ExitCode.USAGE;
    }

    /** Parses {@code args} and checks the options against each other; for tests. */
    static BenchmarkOptions parse(String[] args) {
        return parse(args, System.getenv());
    }

    /** {@link #parse(String[])} with the environment {@code env}. */
    static BenchmarkOptions parse(String[] args, Map<String, String> env) {
        BenchmarkOptions options = new BenchmarkOptions();
        options.environment = env;
        commandLine(options).parseArgs(args);
        options.check();
        return options;
    }

    /** Checks the options, runs the benchmark and prints its report; picocli calls it once the line is parsed. */
    @Override
    public Integer call() throws Exception {
        check();
        System.out.print(Benchmark.run(this).text());
        System.out.flush();
        return 0;
    }

    /**
     * Checks what picocli cannot: ranges and relations between options.
     *
     * @throws ParameterException naming the bad value
     */
    void check() {
        atLeast("--rows", rows, 1);
        atLeast("--naive-rows", naiveRows, 1);
        atLeast("--value-bytes", valueBytes, 8);
        atLeast("--keys", keys, 1);
        atLeast("--partitions", partitions, 1);
        atLeast("--repeat", repeat, 1);
        atLeast("--warmup-rows", warmupRows, 0);
        atLeast("--writers", writers, 1);
        atLeast("--max-tx-rate", maxTxRate, 1);
        atLeast("--takeover-repeat", takeoverRepeat, 1);
        atLeast("--takeover-rate", takeoverRate, 1);
        if (takeoverWindow.toMillis() < 1_000) {
            throw error("--takeover-window must be at least 1 s: " + takeoverWindow.toMillis() + " ms");
        }
        if (takeoverWarmup.isNegative()) {
            throw error("--takeover-warmup must not be negative: " + takeoverWarmup.toMillis() + " ms");
        }
        atLeast("--mark-batch", markBatchSize, 1);
        atLeast("--max-in-flight", maxInFlightRecords, 1);
        atLeast("--purge-batch", purgeBatchSize, 1);
        for (int rate : rates) {
            atLeast("--rates", rate, 1);
        }
        positive("--naive-seconds", naiveTime);
        positive("--duration", duration);
        positive("--writer-cost-seconds", writerCostTime);
        positive("--timeout", timeout);
        if (markBatchSize > maxInFlightRecords) {
            throw error("--mark-batch (" + markBatchSize + ") must not exceed --max-in-flight (" + maxInFlightRecords
                    + ")");
        }
        if (dbUrl != null && dbUser == null) {
            throw error("--db-url needs --db-user");
        }
        if (dbPasswordOnCommandLine != null) {
            throw error("--db-password is not accepted: a password on a command line shows in ps, in shell history"
                    + " and in the results; put it in the environment variable " + PASSWORD_VARIABLE
                    + " or in a file named by --db-password-file");
        }
        if (dbUrl != null && URL_PASSWORD.matcher(dbUrl).find()) {
            throw error("--db-url carries a password (a password= parameter or user:password@): the URL is shown in"
                    + " the results and on the take-over child's command line; remove it from the URL and put it in"
                    + " the environment variable " + PASSWORD_VARIABLE + " or in a file named by --db-password-file");
        }
        dbPassword = password();
        if (scenarios.remove("all")) {
            scenarios.addAll(ALL_SCENARIOS);
            if (!database.equals("postgres")) {
                WAL_SCENARIOS.forEach(scenarios::remove);
            }
        }
        for (String wal : WAL_SCENARIOS) {
            if (scenarios.contains(wal) && !database.equals("postgres")) {
                throw error("--scenarios " + wal + " needs --database postgres (the WAL harvest), not " + database);
            }
        }
        if (scenarios.isEmpty()) {
            throw error("--scenarios selects nothing");
        }
        if (shards < 2 || shards > dev.outbox.OutboxShards.MAX_SHARDS) {
            throw error("--shards must be between 2 and " + dev.outbox.OutboxShards.MAX_SHARDS + ": " + shards);
        }
        if (!spec.commandLine().getParseResult().hasMatchedOption("--out") && !database.equals("postgres")) {
            out = Path.of(out + "-" + database);
        }
        List<String> args = spec.commandLine().getParseResult().originalArgs();
        if (System.getProperty("bench.command") == null) {
            command = "java dev.outbox.benchmarks.Benchmark" + (args.isEmpty() ? "" : " " + String.join(" ", args));
        }
    }

    /** The password for --db-url: the first line of --db-password-file, else {@link #PASSWORD_VARIABLE}, else empty. */
    private String password() {
        if (dbPasswordFile != null) {
            try {
                List<String> lines = java.nio.file.Files.readAllLines(dbPasswordFile,
                        java.nio.charset.StandardCharsets.UTF_8);
                return lines.isEmpty() ? "" : lines.get(0);
            } catch (java.io.IOException e) {
                throw error("--db-password-file " + dbPasswordFile + " cannot be read: " + e);
            }
        }
        String fromEnv = environment.get(PASSWORD_VARIABLE);
        return fromEnv == null ? "" : fromEnv;
    }

    /** {@link #MASK} if a password is set, else empty: what results show. */
    String maskedPassword() {
        return dbPassword.isEmpty() ? "" : MASK;
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

    private void atLeast(String name, long value, long min) {
        if (value < min) {
            throw error(name + " must be at least " + min + ", was " + value);
        }
    }

    private void positive(String name, Duration value) {
        if (value.isZero()) {
            throw error(name + " must be positive seconds, was 0");
        }
    }

    private ParameterException error(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** Seconds as {@code 20}, {@code 1.5} or {@code 20s}; not negative. */
    static final class Seconds implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            double s;
            try {
                s = Double.parseDouble(value.endsWith("s") ? value.substring(0, value.length() - 1) : value);
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("not seconds: '" + value + "'");
            }
            if (s < 0 || Double.isNaN(s) || Double.isInfinite(s)) {
                throw new CommandLine.TypeConversionException("seconds must be at least 0, was '" + value + "'");
            }
            return Duration.ofMillis(Math.round(s * 1000));
        }
    }

    /** A positive number, or {@code auto} (0). */
    static final class RecordsPerTx implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            if (value.equals("auto")) {
                return 0;
            }
            int n = Integer.parseInt(value);
            if (n < 1) {
                throw new CommandLine.TypeConversionException("must be auto or at least 1, was " + n);
            }
            return n;
        }
    }

    /** One word of a fixed set, case-insensitive; the message names the set. */
    private abstract static class OneOf implements CommandLine.ITypeConverter<String> {
        private final Set<String> words;

        OneOf(String... words) {
            this.words = Set.of(words);
        }

        @Override
        public String convert(String value) {
            String word = value.trim().toLowerCase(Locale.ROOT);
            if (!words.contains(word)) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not one of " + words);
            }
            return word;
        }
    }

    static final class Database extends OneOf {
        Database() {
            super("postgres", "mysql", "mariadb");
        }
    }

    static final class Servers extends OneOf {
        Servers() {
            super("embedded", "docker", "auto");
        }
    }

    static final class SynchronousCommit extends OneOf {
        SynchronousCommit() {
            super("on", "off", "local", "remote_write", "remote_apply", "server");
        }
    }

    static final class TakeoverMode extends OneOf {
        TakeoverMode() {
            super("close", "crash");
        }
    }

    static final class Election extends OneOf {
        Election() {
            super(TakeoverScenario.KAFKA, TakeoverScenario.DATABASE);
        }
    }

    static final class Scenario extends OneOf {
        /** Every scenario of {@code all}, those left out of it, and {@code all}: one list, so none is forgotten. */
        Scenario() {
            super(java.util.stream.Stream.concat(ALL_SCENARIOS.stream(),
                    java.util.stream.Stream.of("drain-nopurge", "drain-latest-only", "latency-shards", "all")).distinct()
                    .toArray(String[]::new));
        }
    }

    /** The project's version, from the resource {@code version.txt} that the build fills in. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws java.io.IOException {
            try (var in = Version.class.getResourceAsStream("version.txt")) {
                String version = in == null ? "unknown" : new String(in.readAllBytes(),
                        java.nio.charset.StandardCharsets.UTF_8).strip();
                return new String[]{"outbox-benchmarks " + version + " (Outbox for the JVM)"};
            }
        }
    }
}
