package dev.outbox.benchmarks;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The benchmark: on one set of servers and settings, in one run, measures the Dispatcher's drain rate next to
 * the database ceiling, the broker ceiling and the naive baseline; latency under a fixed offered load; and
 * take-over after the leader is stopped. Prints a table and writes it as text, CSV and JSON.
 *
 * <pre>
 * ./bench.sh                      # everything, embedded servers, 1,000,000 rows
 * ./bench.sh --rows 100000 --repeat 1 --scenarios drain,database
 * ./bench.sh --rows 300000 --scenarios drain,drain-wal,cursor,wal-ceiling,broker,latency,latency-wal
 * ./bench.sh --help
 * </pre>
 */
public final class Benchmark {
    private Benchmark() {
    }

    /**
     * Parses the command line (picocli answers {@code --help}, {@code --version} and usage errors, with exit code
     * 2 for the latter), runs the benchmark and prints the report ({@link BenchmarkOptions#call()}).
     */
    public static void main(String[] args) {
        int exit = BenchmarkOptions.commandLine(new BenchmarkOptions()).execute(args);
        System.exit(exit); // embedded servers and Kafka's threads would keep the JVM alive
    }

    /** Runs the selected scenarios and writes results.{txt,csv,json} to --out; returns the report. */
    static Report run(BenchmarkOptions options) throws Exception {
        Report report = new Report(options);
        report.startedAt = Instant.now();
        report.loadAtStart = Machine.loadAverage();
        try (BenchEnvironment env = new BenchEnvironment(options)) {
            report.describeEnvironment(env);
            if (options.runs("writer-cost")) {
                Progress.say("writer cost: table INSERT vs WAL emit, %s per cell, %d round(s) ...",
                        options.writerCostTime, options.repeat);
                java.io.ByteArrayOutputStream table = new java.io.ByteArrayOutputStream();
                try (java.io.PrintStream print = new java.io.PrintStream(table, true,
                        java.nio.charset.StandardCharsets.UTF_8)) {
                    report.writerCost = WriterCostBenchmark.run(options.command,
                            options.writerCostTime.toMillis() / 1000.0, options.repeat, print);
                }
                report.writerCostTable = table.toString(java.nio.charset.StandardCharsets.UTF_8);
                System.err.print(report.writerCostTable);
                ThroughputScenarios.settle();
            }
            ThroughputScenarios throughput = new ThroughputScenarios(env, options);
            CeilingScenarios ceilings = new CeilingScenarios(env, options);
            RabbitMqScenarios rabbitMq = new RabbitMqScenarios(env, options, throughput);
            if (options.warmupRows > 0) {
                warmUp(options, throughput, ceilings);
            }
            Map<String, List<ThroughputScenarios.Run>> runs = new LinkedHashMap<>();
            for (int r = 1; r <= options.repeat; r++) {
                long seed = options.seed + r;
                for (String scenario : ThroughputScenarios.NAMES) {
                    if (!options.runs(scenario)) {
                        continue;
                    }
                    Progress.say("%s, run %d of %d ...", scenario, r, options.repeat);
                    ThroughputScenarios.Run run = switch (scenario) {
                        case "drain" -> throughput.drain(options.rows, seed);
                        case "drain-unfenced" -> throughput.drainUnfenced(options.rows, seed);
                        case "drain-txn" -> throughput.drainTransactional(options.rows, seed);
                        case "drain-eos" -> throughput.drainExactlyOnce(options.rows, seed);
                        case "drain-mark" -> throughput.drainByMark(options.rows, seed);
                        case "drain-nopurge" -> throughput.drainWithoutPurge(options.rows, seed);
                        case "drain-wal" -> throughput.drainWal(options.rows, seed);
                        case "drain-handlers" -> throughput.drainHandlers(options.rows, seed);
                        case "drain-latest-only" -> throughput.drainLatestOnly(options.rows, seed);
                        case "drain-rabbitmq" -> rabbitMq.drain(options.rows, seed);
                        case "drain-shards" -> throughput.drainSharded("drain-shards", options.rows, seed, 1);
                        case "drain-shards-2" -> throughput.drainSharded("drain-shards-2", options.rows, seed, 2);
                        case "wal-ceiling" -> ceilings.walCeiling(options.rows, seed);
                        case "database" -> ceilings.databaseCeiling(options.rows, seed);
                        case "cursor" -> ceilings.cursorCeiling(options.rows, seed);
                        case "broker" -> ceilings.brokerCeiling(options.rows, seed);
                        case "broker-rabbitmq" -> rabbitMq.ceiling(options.rows, seed);
                        default -> ceilings.naive(Math.min(options.naiveRows, options.rows), seed);
                    };
                    Progress.say("%s: %,.0f records/s (%,d records in %.2f s, %d rows left, fill %.1f s)", scenario,
                            run.rate(), run.records(), run.seconds(), run.left(), run.fillSeconds());
                    if (!run.breakdown().isEmpty()) {
                        Progress.say("%s: %s", scenario, run.breakdown());
                    }
                    runs.computeIfAbsent(scenario, k -> new ArrayList<>()).add(run);
                    ThroughputScenarios.settle();
                }
            }
            report.throughput = runs;
            if (java.util.stream.Stream.of("latency", "latency-txn", "latency-eos", "latency-wal", "latency-handlers", "latency-rabbitmq", "latency-shards",
                    "latency-poll", "latency-mark").anyMatch(options::runs) && !options.latencyJitWarmup.isZero()) {
                Progress.say("latency warm-up: %s at 5,000 and %s at 100 records/s (not recorded) ...",
                        options.latencyJitWarmup, options.latencyJitWarmup);
                LatencyScenario.warmUp(env, options);
                ThroughputScenarios.settle();
            }
            if (options.runs("latency")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered for %s (+ %s warm-up) ...", rate,
                            options.duration, options.latencyWarmup);
                    LatencyScenario.Result result = latency.run(rate);
                    Progress.say("latency at %,d/s: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms (commit->send"
                                    + " p50 %.1f ms, p99 %.1f ms; send->ack p50 %.1f ms, p99 %.1f ms); backlog max %d, %s",
                            rate, result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max(),
                            result.commitToSend().p50(), result.commitToSend().p99(), result.sendToAck().p50(),
                            result.sendToAck().p99(), result.backlogMax(),
                            result.sustainable() ? "sustainable" : "NOT sustainable");
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            for (boolean exactlyOnce : new boolean[] {false, true}) {
                if (!options.runs(exactlyOnce ? "latency-eos" : "latency-txn")) {
                    continue;
                }
                String label = exactlyOnce ? "transactional producer, exactly once" : "transactional producer";
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, %s ...", rate, label);
                    env.transactionalBrokers(exactlyOnce ? "bench-eos" : "bench-txn", exactlyOnce);
                    LatencyScenario.Result result;
                    try {
                        result = exactlyOnce ? latency.runExactlyOnce(rate) : latency.runTransactional(rate);
                    } finally {
                        env.transactionalBrokers(null);
                    }
                    Progress.say("latency at %,d/s, %s: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms; %s", rate,
                            label, result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max(),
                            result.sustainable() ? "sustainable" : "NOT sustainable");
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-wal")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, WAL harvest ...", rate);
                    LatencyScenario.Result result = latency.runWal(rate);
                    Progress.say("latency at %,d/s, WAL harvest: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms"
                                    + " (commit->send p50 %.1f ms; send->ack p50 %.1f ms); %s", rate,
                            result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max(),
                            result.commitToSend().p50(), result.sendToAck().p50(),
                            result.sustainable() ? "sustainable" : "NOT sustainable");
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-handlers")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, in-process handlers ...", rate);
                    LatencyScenario.Result result = latency.runHandlers(rate);
                    Progress.say("latency at %,d/s, in-process handlers: commit->ack p50 %.1f ms, p99 %.1f ms,"
                                    + " max %.1f ms; %s", rate, result.commitToAck().p50(), result.commitToAck().p99(),
                            result.commitToAck().max(), result.sustainable() ? "sustainable" : "NOT sustainable");
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-rabbitmq")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, RabbitMQ ...", rate);
                    LatencyScenario.Result result = latency.runRabbitMq(rate);
                    Progress.say("latency at %,d/s, RabbitMQ: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms"
                                    + " (commit->send p50 %.1f ms; send->ack p50 %.1f ms); %s", rate,
                            result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max(),
                            result.commitToSend().p50(), result.sendToAck().p50(),
                            result.sustainable() ? "sustainable" : "NOT sustainable");
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-shards")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, %d shards led by one Dispatcher ...", rate,
                            options.shards);
                    LatencyScenario.Result result = latency.runSharded(rate);
                    Progress.say("latency at %,d/s, %d shards: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                            rate, options.shards, result.commitToAck().p50(), result.commitToAck().p99(),
                            result.commitToAck().max());
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-poll")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, polling ...", rate);
                    LatencyScenario.Result result = latency.runPolling(rate);
                    Progress.say("latency at %,d/s, polling: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms", rate,
                            result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max());
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("latency-mark")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (int rate : options.rates) {
                    Progress.say("latency at %,d records/s offered, mark harvest ...", rate);
                    LatencyScenario.Result result = latency.run(rate, options.keys, false,
                            dev.outbox.DispatcherConfig.Harvest.MARK);
                    Progress.say("latency at %,d/s, mark harvest: commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                            rate, result.commitToAck().p50(), result.commitToAck().p99(), result.commitToAck().max());
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("poison")) {
                LatencyScenario latency = new LatencyScenario(env, options);
                for (boolean poison : new boolean[] {false, true}) {
                    Progress.say("latency at %,d records/s over %,d keys%s ...", BenchmarkOptions.POISON_RATE,
                            BenchmarkOptions.POISON_HEALTHY_KEYS, poison ? " plus one poison key" : "");
                    LatencyScenario.Result result = latency.run(BenchmarkOptions.POISON_RATE,
                            BenchmarkOptions.POISON_HEALTHY_KEYS, poison);
                    Progress.say("%s: healthy commit->ack p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d poison sends"
                                    + " failed", result.variant(), result.commitToAck().p50(),
                            result.commitToAck().p99(), result.commitToAck().max(), result.poisonFailures());
                    report.latency.add(result);
                    ThroughputScenarios.settle();
                }
            }
            if (options.runs("takeover")) {
                TakeoverScenario takeover = new TakeoverScenario(env, options);
                for (String election : options.elections) {
                    for (String mode : options.takeoverModes) {
                        for (int i = 1; i <= options.takeoverRepeat; i++) {
                            Progress.say("take-over (%s election, %s), run %d of %d ...", election, mode, i,
                                    options.takeoverRepeat);
                            TakeoverScenario.Result result = takeover.run(election, mode, i);
                            Progress.say("take-over (%s election, %s): leader acquired after %.2f s, first record"
                                    + " acked after %.2f s", election, mode, result.leaderAcquired(),
                                    result.firstAck());
                            report.takeover.add(result);
                        }
                    }
                }
            }
            if (options.runs("takeover-shards")) {
                ShardedTakeoverScenario takeover = new ShardedTakeoverScenario(env, options);
                for (int run = 0; run < options.elections.size() * options.takeoverRepeat; run++) {
                    String election = options.elections.get(run / options.takeoverRepeat);
                    int i = run % options.takeoverRepeat + 1;
                    Progress.say("take-over of %d of %d shards (%s election, SIGKILL of one of %d Dispatcher JVMs),"
                                    + " run %d of %d ...", ShardedTakeoverScenario.SHARDS / ShardedTakeoverScenario.DISPATCHERS,
                            ShardedTakeoverScenario.SHARDS, election, ShardedTakeoverScenario.DISPATCHERS, i,
                            options.takeoverRepeat);
                    ShardedTakeoverScenario.Result r = takeover.run(election, i);
                    Progress.say(election + " election: take-over of shards: the other shards' commit->ack p99 %.1f ms quiet, %.1f ms through"
                                    + " the take-over (x%.2f), %.1f ms around the move (x%.2f); the killed Dispatcher's %d shards led again after %.2f s,"
                                    + " acknowledging after %.2f s; %,d committed (none lost), %d acknowledged by the killed JVM unreported, %d duplicates",
                            r.quietOthers().p99(), r.takeoverOthers().p99(), r.p99Ratio(), r.moveOthers().p99(),
                            r.moveP99Ratio(), r.killedShards(),
                            r.movedAfter(), r.ownFirstAck(), r.committed(), r.unreported(), r.duplicates());
                    report.shardTakeover.add(r);
                }
            }
            if (options.runs("inbox")) {
                runInbox(env, options, report);
            }
        }
        report.loadAtEnd = Machine.loadAverage();
        report.finishedAt = Instant.now();
        Path dir = options.out;
        report.write(dir);
        Progress.say("results written to %s", dir.toAbsolutePath().resolve("results.{txt,csv,json}"));
        return report;
    }

    /** The consumer side: the inbox consumer next to a bare consumer, same topic and database. */
    private static void runInbox(BenchEnvironment env, BenchmarkOptions options, Report report) throws Exception {
        int records = Math.min(options.rows, InboxScenario.MAX_RECORDS);
        Progress.say("inbox consumer vs bare consumer, %,d records each ...", records);
        for (InboxScenario.Result r : new InboxScenario(env, options).run(records)) {
            Progress.say("%s: %,.0f records/s (%,d records in %.2f s)", r.consumer(), r.rate(), r.records(),
                    r.seconds());
            report.inbox.add(r);
        }
    }

    private static void warmUp(BenchmarkOptions options, ThroughputScenarios throughput,
                               CeilingScenarios ceilings) throws Exception {
        int rows = options.warmupRows;
        Progress.say("warm-up: %,d rows through each throughput scenario (not recorded) ...", rows);
        if (options.runs("drain")) {
            throughput.drain(rows, options.seed);
        }
        if (options.runs("drain-txn")) {
            throughput.drainTransactional(rows, options.seed);
        }
        if (options.runs("drain-eos")) {
            throughput.drainExactlyOnce(rows, options.seed);
        }
        if (options.runs("drain-unfenced")) {
            throughput.drainUnfenced(rows, options.seed);
        }
        if (options.runs("drain-mark")) {
            throughput.drainByMark(rows, options.seed);
        }
        if (options.runs("drain-nopurge")) {
            throughput.drainWithoutPurge(rows, options.seed);
        }
        if (options.runs("drain-latest-only")) {
            throughput.drainLatestOnly(rows, options.seed);
        }
        if (options.runs("database")) {
            ceilings.databaseCeiling(rows, options.seed);
        }
        if (options.runs("cursor")) {
            ceilings.cursorCeiling(rows, options.seed);
        }
        if (options.runs("drain-wal")) {
            throughput.drainWal(rows, options.seed);
        }
        if (options.runs("drain-handlers")) {
            throughput.drainHandlers(rows, options.seed);
        }
        if (options.runs("wal-ceiling")) {
            ceilings.walCeiling(rows, options.seed);
        }
        if (options.runs("broker")) {
            ceilings.brokerCeiling(rows, options.seed);
        }
        ThroughputScenarios.settle();
    }
}
