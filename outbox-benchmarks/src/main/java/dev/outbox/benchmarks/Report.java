package dev.outbox.benchmarks;

import dev.outbox.DispatcherConfig;
import dev.outbox.testservers.JdbcServer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The results of one run and where they came from, rendered as a text table, CSV (one measurement per line:
 * section, scenario, run, metric, value) and JSON. Not thread-safe.
 */
final class Report {
    private static final Map<String, String> TITLES = Map.ofEntries(
            Map.entry("drain", "Dispatcher -> Kafka (cursor harvest)"),
            Map.entry("drain-unfenced", "Dispatcher -> Kafka (cursor, storage fencing off)"),
            Map.entry("drain-mark", "Dispatcher -> Kafka (mark harvest)"),
            Map.entry("drain-nopurge", "cursor drain, purges skipped (bound)"),
            Map.entry("drain-latest-only", "Dispatcher -> Kafka (latest only)"),
            Map.entry("drain-wal", "Dispatcher -> Kafka (WAL harvest)"),
            Map.entry("drain-handlers", "Dispatcher -> in-process handlers"),
            Map.entry("drain-txn", "Dispatcher -> Kafka (transactional)"),
            Map.entry("drain-eos", "Dispatcher -> Kafka (exactly once)"),
            Map.entry("drain-rabbitmq", "Dispatcher -> RabbitMQ (confirms)"),
            Map.entry("drain-shards", "sharded cursor drain, 1 Dispatcher"),
            Map.entry("drain-shards-2", "sharded cursor drain, 2 Dispatchers"),
            Map.entry("database", "database ceiling (mark+purge)"),
            Map.entry("cursor", "database ceiling (read+purge)"),
            Map.entry("wal-ceiling", "WAL ceiling (stream read+confirm)"),
            Map.entry("broker", "broker ceiling (bare producer)"),
            Map.entry("broker-rabbitmq", "RabbitMQ ceiling (bare publisher)"),
            Map.entry("naive", "naive baseline (1 row/stmt)"));

    final BenchmarkOptions options;
    Instant startedAt;
    Instant finishedAt;
    double loadAtStart;
    double loadAtEnd;
    String database = "?";
    String kafka = "?";
    Map<String, String> databaseSettings = new LinkedHashMap<>();
    Map<String, Object> producer = new LinkedHashMap<>();
    DispatcherConfig dispatcher;
    Map<String, List<ThroughputScenarios.Run>> throughput = new LinkedHashMap<>();
    List<LatencyScenario.Result> latency = new ArrayList<>();
    List<TakeoverScenario.Result> takeover = new ArrayList<>();
    List<ShardedTakeoverScenario.Result> shardTakeover = new ArrayList<>();
    List<InboxScenario.Result> inbox = new ArrayList<>();
    /** The writer-cost cells, and the table {@link WriterCostBenchmark} printed (empty if not run). */
    List<WriterCostBenchmark.Cell> writerCost = new ArrayList<>();
    String writerCostTable = "";

    Report(BenchmarkOptions options) {
        this.options = options;
    }

    void describeEnvironment(BenchEnvironment env) {
        JdbcServer server = env.database().server();
        String product = switch (server.kind()) {
            case POSTGRES -> "PostgreSQL";
            case MYSQL -> "MySQL";
            case MARIADB -> "MariaDB";
        };
        database = product + " " + server.version() + " (" + server.mode().name().toLowerCase(Locale.ROOT) + ")";
        kafka = "Kafka " + env.kafka().version() + " (" + env.kafka().mode().name().toLowerCase(Locale.ROOT)
                + (env.kafka().mode().name().equals("EMBEDDED") ? ", single KRaft node in the benchmark's JVM" : "")
                + ")";
        databaseSettings = env.database().settings();
        producer = env.producerProperties();
        producer.remove("bootstrap.servers");
        dispatcher = env.dispatcherConfig();
    }

    // ------------------------------------------------------------------------------------------ numbers

    static double median(Collection<Double> values) {
        List<Double> s = new ArrayList<>(values);
        if (s.isEmpty()) {
            return Double.NaN;
        }
        s.sort(Double::compare);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    private List<Double> rates(String scenario) {
        List<Double> out = new ArrayList<>();
        for (ThroughputScenarios.Run r : throughput.getOrDefault(scenario, List.of())) {
            out.add(r.rate());
        }
        return out;
    }

    double medianRate(String scenario) {
        return median(rates(scenario));
    }

    /** The Dispatcher's median drain rate divided by {@code scenario}'s. */
    double ratio(String scenario) {
        return medianRate("drain") / medianRate(scenario);
    }

    private long maxLeft(String scenario) {
        long max = -1;
        for (ThroughputScenarios.Run r : throughput.getOrDefault(scenario, List.of())) {
            max = Math.max(max, r.left());
        }
        return max;
    }

    private List<Double> takeoverTimes(String election, String mode, boolean ack) {
        List<Double> out = new ArrayList<>();
        for (TakeoverScenario.Result r : takeover) {
            if (r.election().equals(election) && r.mode().equals(mode)) {
                out.add(ack ? r.firstAck() : r.leaderAcquired());
            }
        }
        return out;
    }

    /** Each goal of the issue: what it asks, what was measured, and whether it was met (null: not measured). */
    List<String[]> goals() {
        List<String[]> g = new ArrayList<>();
        if (throughput.containsKey("drain") && throughput.containsKey("cursor")) {
            double r = ratio("cursor");
            g.add(new String[] {"drain rate >= 75 % of the read+purge ceiling", pct(r), verdict(r >= 0.75)});
        }
        if (throughput.containsKey("drain")) {
            double rate = medianRate("drain");
            g.add(new String[] {"drain >= 150,000 records/s (Postgres, this machine)", fmt("%,.0f records/s", rate),
                    verdict(rate >= 150_000)});
        }
        if (throughput.containsKey("drain") && throughput.containsKey("drain-unfenced")) {
            double r = ratio("drain-unfenced");
            g.add(new String[] {"storage fencing keeps >= 95 % of the unfenced drain", pct(r), verdict(r >= 0.95)});
        }
        if (throughput.containsKey("drain") && throughput.containsKey("drain-mark")) {
            double r = ratio("drain-mark");
            g.add(new String[] {"cursor harvest >= 2 x the mark harvest (the MySQL goal)", fmt("%.2f x", r),
                    verdict(r >= 2)});
        }
        if (throughput.containsKey("drain") && throughput.containsKey("naive")) {
            double r = ratio("naive");
            g.add(new String[] {"drain rate >= 10 x the naive baseline", fmt("%.1f x", r), verdict(r >= 10)});
        }
        if (throughput.containsKey("drain-wal")) {
            double rate = medianRate("drain-wal");
            double broker = throughput.containsKey("broker") ? medianRate("broker") : Double.NaN;
            double goal = Double.isNaN(broker) ? 300_000 : Math.min(300_000, broker);
            g.add(new String[] {"WAL drain >= 300,000 records/s, or the bare producer's rate if lower",
                    fmt("%,.0f records/s (goal %,.0f)", rate, goal), verdict(rate >= goal)});
        }
        latency.stream().filter(l -> l.variant().startsWith(LatencyScenario.WAL_VARIANT))
                .min(java.util.Comparator.comparingInt(LatencyScenario.Result::offeredRate)).ifPresent(l ->
                        g.add(new String[] {"WAL harvest, idle: p50 commit->ack < 2 ms",
                                fmt("p50 %.2f ms at %,d records/s", l.commitToAck().p50(), l.offeredRate()),
                                verdict(l.commitToAck().p50() < 2)}));
        LatencyScenario.Result clean = latency.stream()
                .filter(l -> !l.poisoned() && l.variant().startsWith(BenchmarkOptions.POISON_HEALTHY_KEYS + " "))
                .findFirst().orElse(null);
        LatencyScenario.Result poisoned = latency.stream().filter(LatencyScenario.Result::poisoned).findFirst()
                .orElse(null);
        if (clean != null && poisoned != null) {
            double r = poisoned.commitToAck().p99() / clean.commitToAck().p99();
            g.add(new String[] {"poison key: healthy keys' p99 commit->ack within 2 x of a run without it",
                    fmt("%.1f ms vs %.1f ms (%.2f x)", poisoned.commitToAck().p99(), clean.commitToAck().p99(), r),
                    verdict(r <= 2)});
        }
        for (LatencyScenario.Result l : latency) {
            if (l.offeredRate() == 5_000 && l.variant().equals(options.keys + " keys")) {
                boolean met = l.commitToAck().p99() < 100 && l.sustainable() && l.writersKeptUp();
                g.add(new String[] {"at 5,000 records/s: p99 commit->ack < 100 ms, backlog bounded",
                        fmt("p99 %.1f ms, %s%s", l.commitToAck().p99(), l.sustainable() ? "bounded" : "grew",
                                l.writersKeptUp() ? "" : ", writers behind"),
                        verdict(met)});
            }
        }
        if (!takeover.isEmpty()) {
            double worst = 0;
            StringBuilder m = new StringBuilder();
            for (String election : options.elections) {
                for (String mode : options.takeoverModes) {
                    List<Double> t = takeoverTimes(election, mode, true);
                    if (t.isEmpty()) {
                        continue;
                    }
                    double max = t.stream().mapToDouble(Double::doubleValue).max().orElse(0);
                    worst = Math.max(worst, max);
                    m.append(m.length() == 0 ? "" : ", ").append(fmt("%s %s: max %.2f s", election, mode, max));
                }
            }
            g.add(new String[] {"take-over < 10 s", m.toString(), verdict(worst < 10)});
        }
        if (!shardTakeover.isEmpty()) {
            double worst = shardTakeover.stream().mapToDouble(ShardedTakeoverScenario.Result::worstRatio).max()
                    .orElse(Double.NaN);
            g.add(new String[] {"sharded take-over: other shards' p99 commit->ack within 2x of quiet (window and"
                    + " move)",
                    fmt("worst %.2f x in %d run(s)", worst, shardTakeover.size()), verdict(worst <= 2)});
        }
        return g;
    }

    private static String verdict(boolean met) {
        return met ? "met" : "NOT met";
    }

    // ------------------------------------------------------------------------------------------ text

    String text() {
        StringBuilder out = new StringBuilder();
        out.append("Outbox benchmark, ").append(startedAt).append(" - ").append(finishedAt).append('\n');
        out.append("Command:   ").append(options.command).append('\n');
        out.append("Machine:   ").append(Machine.describe()).append(fmt("; load average %.2f at start, %.2f at end",
                loadAtStart, loadAtEnd)).append('\n');
        out.append("Java:      ").append(Machine.java()).append(", max heap ").append(Machine.maxHeapMiB())
                .append(" MiB\n");
        out.append("Database:  ").append(database).append(credentials()).append("; ").append(join(databaseSettings))
                .append('\n');
        out.append("Broker:    ").append(kafka).append(", topics of ").append(options.partitions)
                .append(" partitions, replication factor 1\n");
        out.append("Dispatcher: markBatchSize=").append(dispatcher.markBatchSize()).append(", maxInFlightRecords=")
                .append(dispatcher.maxInFlightRecords()).append(", maxInFlightBytes=")
                .append(dispatcher.maxInFlightBytes() >> 20).append(" MiB, purgeBatchSize=")
                .append(dispatcher.purgeBatchSize()).append(" (other settings default)\n");
        out.append("Producer:  ").append(join(producer)).append('\n');
        out.append(fmt("Workload:  backlog of %,d rows (naive baseline: %,d), %d-byte values, %,d keys drawn at random;"
                        + " median of %d run(s)%s\n", options.rows, Math.min(options.naiveRows, options.rows),
                options.valueBytes, options.keys, options.repeat,
                options.warmupRows > 0 ? fmt(" after a warm-up of %,d rows", options.warmupRows) : ", no warm-up"));
        if (throughput.containsKey("drain-shards") || throughput.containsKey("drain-shards-2")) {
            out.append(fmt("Sharded:   the sharded drains' table has %d shards (--shards); with 2 Dispatchers each has"
                    + " its own producer and KafkaShardedLeaderTransport, both in this JVM\n", options.shards));
        }
        if (!writerCostTable.isEmpty()) {
            out.append('\n').append("Writer cost: the same transaction with a table INSERT, an INSERT with"
                    + " pg_notify, and a WAL emit (database outbox_writer_cost, one writer, back to back)\n");
            writerCostTable.lines().filter(l -> !l.startsWith("command: ")).forEach(l -> out.append(l).append('\n'));
        }
        if (!throughput.isEmpty()) {
            out.append('\n');
            out.append(fmt("%-36s %12s  %-23s %9s  %s%n", "Throughput", "records/s", "(min - max)", "rows left",
                    "Dispatcher / this"));
            for (String scenario : ThroughputScenarios.NAMES) {
                List<Double> r = rates(scenario);
                if (r.isEmpty()) {
                    continue;
                }
                double min = r.stream().mapToDouble(Double::doubleValue).min().orElse(0);
                double max = r.stream().mapToDouble(Double::doubleValue).max().orElse(0);
                long left = maxLeft(scenario);
                String ratio = throughput.containsKey("drain") ? fmt("%.2f", ratio(scenario)) : "-";
                out.append(fmt("%-36s %,12.0f  %-23s %9s  %s%n", TITLES.get(scenario), medianRate(scenario),
                        fmt("(%,.0f - %,.0f)", min, max), left < 0 ? "-" : fmt("%,d", left), ratio));
            }
            if (maxLeft("naive") > 0) {
                out.append(fmt("(the naive baseline stops after %s; rows it left are not a failure)%n",
                        seconds(options.naiveTime.toMillis())));
            }
        }
        if (!latency.isEmpty()) {
            out.append('\n');
            String sync = databaseSettings.get("synchronous_commit");
            out.append(fmt("Latency under load: %s of writing per rate after %s of warm-up, %d writer threads%s,"
                            + " single-instance Dispatcher, producer linger.ms=%s%n",
                    seconds(options.duration.toMillis()), seconds(options.latencyWarmup.toMillis()), options.writers,
                    sync == null ? "" : " (committing with synchronous_commit=" + sync + ")",
                    producer.get("linger.ms")));
            out.append(fmt("%-25s %9s %9s %6s %9s  %-24s %-27s %-24s %-15s %9s  %s%n", "harvest, keys", "offered/s",
                    "written/s", "rec/tx", "acked/s", "commit->ack ms p50/p99/max", "scheduled->ack CO-corrected",
                    "commit->consume p50/p99/max", "backlog max/end", "growth/s", "sustainable"));
            for (LatencyScenario.Result l : latency) {
                out.append(fmt("%-25s %,9d %,9.0f %6d %,9.0f  %-24s %-27s %-24s %-15s %,9d  %s%n",
                        l.variant() + (l.poisoned() ? fmt(" (%,d fails)", l.poisonFailures()) : ""),
                        l.offeredRate(),
                        l.achievedRate(), l.recordsPerTx(), l.ackRate(), stats(l.commitToAck()),
                        stats(l.scheduledToAck()), stats(l.commitToConsume()),
                        fmt("%,d / %,d", l.backlogMax(), l.backlogEnd()),
                        Math.round(l.backlogSlope()), (l.sustainable() ? "yes" : "NO")
                                + (l.unacknowledged() > 0 ? fmt(" (%,d not acked)", l.unacknowledged()) : "")
                                + (l.writersKeptUp() ? "" : " (writers fell behind the offered rate)")));
            }
        }
        if (!takeover.isEmpty()) {
            out.append('\n');
            out.append(fmt("Take-over: two Dispatchers, writer at %,d records/s; heartbeatTimeout %s,"
                            + " delivery.timeout.ms %d; kafka: KafkaLeaderTransport, session.timeout.ms %d; database:"
                            + " SqlLeaderTransport, %s%n",
                    options.takeoverRate, seconds(TakeoverScenario.HEARTBEAT_TIMEOUT.toMillis()),
                    TakeoverScenario.DELIVERY_TIMEOUT_MS, TakeoverScenario.SESSION_TIMEOUT_MS,
                    leaseTimings()));
            out.append(fmt("%-9s %-48s %5s  %-26s %s%n", "election", "leader stopped by", "runs",
                    "new leader elected s", "first record acked s"));
            for (String election : options.elections) {
                for (String mode : options.takeoverModes) {
                    List<Double> ack = takeoverTimes(election, mode, true);
                    if (ack.isEmpty()) {
                        continue;
                    }
                    List<Double> acq = takeoverTimes(election, mode, false);
                    String how = mode.equals("close") ? "close: Dispatcher.close() (drain, "
                            + (election.equals(TakeoverScenario.DATABASE) ? "release lease)" : "leave group)")
                            : "crash: SIGKILL of the leader's JVM";
                    out.append(fmt("%-9s %-48s %5d  %-26s %s%n", election, how, ack.size(), spread(acq),
                            spread(ack)));
                }
            }
        }
        appendShardTakeover(out);
        appendInbox(out);
        List<String[]> goals = goals();
        if (!goals.isEmpty()) {
            out.append('\n').append("Goals (reported, not asserted)\n");
            for (String[] g : goals) {
                out.append(fmt("  %-68s %-36s %s%n", g[0], g[1], g[2]));
            }
        }
        return out.toString();
    }

    /** The CSV scenario's prefix of a take-over's election: none for Kafka's (as before the database election). */
    static String electionPrefix(String election) {
        return election.equals(TakeoverScenario.KAFKA) ? "" : election + "-";
    }

    /** The database election's lease timings, as the take-over scenarios run them. */
    private String leaseTimings() {
        dev.outbox.store.sql.SqlLeaseTimings t = TakeoverScenario.leaseTimings(TakeoverScenario.config(
                dev.outbox.DispatcherConfig.builder().build()));
        return fmt("lease %d ms, renewed every %d ms, tried every %d ms", t.leaseDuration().toMillis(),
                t.renewInterval().toMillis(), t.acquireInterval().toMillis());
    }

    /** The sharded take-over: the other shards' latency through the take-over next to a quiet window's. */
    private void appendShardTakeover(StringBuilder out) {
        if (shardTakeover.isEmpty()) {
            return;
        }
        out.append('\n');
        out.append(fmt("Sharded take-over: %d shards over %d Dispatcher JVMs (kafka: KafkaShardedLeaderTransport,"
                        + " session.timeout.ms %d; database: SqlShardedLeaderTransport, %s), writer at"
                        + " %,d records/s; a warm-up of %s, then one JVM killed (SIGKILL) after a quiet window of %s;"
                        + " commit->ack in ms of the records committed in each window; the move:"
                        + " from %d ms before the killed JVM's shards were led again to %d ms after%n",
                ShardedTakeoverScenario.SHARDS, ShardedTakeoverScenario.DISPATCHERS,
                TakeoverScenario.SESSION_TIMEOUT_MS, leaseTimings(), options.takeoverRate,
                seconds(options.takeoverWarmup.toMillis()), seconds(options.takeoverWindow.toMillis()),
                ShardedTakeoverScenario.MOVE_BEFORE_MS, ShardedTakeoverScenario.MOVE_AFTER_MS));
        out.append(fmt("%-9s %-4s %-22s %-22s %7s  %-22s %7s  %-22s %-24s %8s %9s %9s %s%n", "election", "run",
                "others quiet p50/p99/max", "others take-over", "p99 x", "others around the move", "p99 x",
                "killed's quiet", "killed's take-over", "moved s", "acking s", "committed",
                "unreported / duplicates"));
        for (ShardedTakeoverScenario.Result r : shardTakeover) {
            out.append(fmt("%-9s %-4d %-22s %-22s %7.2f  %-22s %7.2f  %-22s %-24s %8.2f %9.2f %,9d %d / %d%n", r.election(), r.run(),
                    stats(r.quietOthers()), stats(r.takeoverOthers()), r.p99Ratio(), stats(r.moveOthers()),
                    r.moveP99Ratio(), stats(r.quietOwn()),
                    stats(r.takeoverOwn()), r.movedAfter(), r.ownFirstAck(), r.committed(), r.unreported(),
                    r.duplicates()));
        }
    }

    /** The consumer side: the inbox consumer's rate next to the bare consumer's, and their ratio. */
    private void appendInbox(StringBuilder out) {
        if (inbox.isEmpty()) {
            return;
        }
        out.append('\n').append("Consumers: one transaction per record, the same effect row, same topic and database\n");
        out.append(fmt("%-48s %12s %10s %8s%n", "consumer", "records/s", "records", "ratio to bare (mean)"));
        double bare = inbox.stream().filter(r -> r.consumer().startsWith("bare"))
                .mapToDouble(InboxScenario.Result::rate).average().orElse(Double.NaN);
        for (InboxScenario.Result r : inbox) {
            out.append(fmt("%-48s %,12.0f %,10d %8.2f%n", r.consumer(), r.rate(), r.records(), r.rate() / bare));
        }
    }

    private static String spread(List<Double> values) {
        double min = values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
        double max = values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        return fmt("%.2f (%.2f - %.2f)", median(values), min, max);
    }

    private static String stats(LatencyScenario.Stats s) {
        return fmt("%.1f / %.1f / %.1f", s.p50(), s.p99(), s.max());
    }

    private static String seconds(long millis) {
        return millis % 1000 == 0 ? (millis / 1000) + " s" : fmt("%.1f s", millis / 1000.0);
    }

    private static String pct(double ratio) {
        return fmt("%.0f %%", ratio * 100);
    }

    private static String join(Map<String, ?> map) {
        StringBuilder b = new StringBuilder();
        map.forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k).append('=').append(v));
        return b.toString();
    }

    static String fmt(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }

    // ------------------------------------------------------------------------------------------ files

    void write(Path dir) {
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("results.txt"), text(), StandardCharsets.UTF_8);
            ReportFiles files = new ReportFiles(this);
            Files.writeString(dir.resolve("results.csv"), files.csv(), StandardCharsets.UTF_8);
            ReportFiles.JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("results.json").toFile(),
                    files.json());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write results to " + dir, e);
        }
    }

    /** The database credentials as the results show them: the user, and the password masked. */
    String credentials() {
        if (options.dbUrl == null) {
            return "";
        }
        return ", user " + options.dbUser + (options.dbPassword.isEmpty() ? ", no password"
                : ", password " + options.maskedPassword());
    }

    /** The results as CSV ({@link ReportFiles#csv}). */
    String csv() {
        return new ReportFiles(this).csv();
    }

    /** The results as the JSON tree of results.json ({@link ReportFiles#json}). */
    Map<String, Object> json() {
        return new ReportFiles(this).json();
    }
}
