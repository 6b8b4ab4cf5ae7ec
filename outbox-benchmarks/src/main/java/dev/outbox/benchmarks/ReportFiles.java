package dev.outbox.benchmarks;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The benchmark's machine-readable results, results.csv and results.json, written from a {@link Report}: one line or
 * node per figure, with the settings and the machine. A database password appears only masked.
 */
final class ReportFiles {
    /** Writes results.json; NaN and infinite figures become null. */
    static final ObjectMapper JSON = new ObjectMapper().registerModule(new SimpleModule()
            .addSerializer(Double.class, new StdSerializer<>(Double.class) {
                @Override
                public void serialize(Double value, JsonGenerator json, SerializerProvider provider)
                        throws IOException {
                    if (value.isNaN() || value.isInfinite()) {
                        json.writeNull();
                    } else {
                        json.writeNumber(value);
                    }
                }
            }));

    private final Report report;

    ReportFiles(Report report) {
        this.report = report;
    }

    /** @return results.csv: a header, then one {@code section,scenario,run,metric,value} line per figure */
    String csv() {
        StringBuilder out = new StringBuilder("section,scenario,run,metric,value\n");
        for (WriterCostBenchmark.Cell c : report.writerCost) {
            String s = "sync_" + c.sync() + "_n_" + c.messages();
            Map<String, WriterCostBenchmark.Cost> both = new LinkedHashMap<>();
            both.put("table", c.table());
            both.put("table_notify", c.notifying());
            both.put("wal", c.wal());
            both.forEach((publisher, cost) -> {
                csvLine(out, "writer_cost", s, c.round(), publisher + "_commits_per_s",
                        Report.fmt("%.1f", cost.commitsPerSecond()));
                csvLine(out, "writer_cost", s, c.round(), publisher + "_server_us_per_commit",
                        Report.fmt("%.2f", cost.serverMicros()));
                csvLine(out, "writer_cost", s, c.round(), publisher + "_jvm_us_per_commit",
                        Report.fmt("%.2f", cost.jvmMicros()));
            });
        }
        report.throughput.forEach((scenario, runs) -> {
            int i = 1;
            for (ThroughputScenarios.Run r : runs) {
                csvLine(out, "throughput", scenario, i, "records_per_s", Report.fmt("%.1f", r.rate()));
                csvLine(out, "throughput", scenario, i, "records", r.records());
                csvLine(out, "throughput", scenario, i, "seconds", Report.fmt("%.3f", r.seconds()));
                csvLine(out, "throughput", scenario, i, "rows_left", r.left());
                i++;
            }
            csvLine(out, "throughput", scenario, "median", "records_per_s", Report.fmt("%.1f", report.medianRate(scenario)));
            if (report.throughput.containsKey("drain")) {
                csvLine(out, "throughput", scenario, "median", "dispatcher_ratio", Report.fmt("%.4f", report.ratio(scenario)));
            }
        });
        for (LatencyScenario.Result l : report.latency) {
            String s = "rate_" + l.offeredRate() + (l.poisoned() ? "_poison" : "")
                    + (l.variant().contains(LatencyScenario.TXN_VARIANT) ? "_txn" : "")
                    + (l.variant().contains(LatencyScenario.EOS_VARIANT) ? "_eos" : "")
                    + (l.variant().contains(LatencyScenario.MARK_VARIANT) ? "_mark" : "")
                    + (l.variant().contains(LatencyScenario.WAL_VARIANT) ? "_wal" : "")
                    + (l.variant().contains(LatencyScenario.POLL_VARIANT) ? "_poll" : "")
                    + (l.variant().contains(LatencyScenario.HANDLERS_VARIANT) ? "_handlers" : "")
                    + (l.variant().contains(LatencyScenario.RABBITMQ_VARIANT) ? "_rabbitmq" : "")
                    + (l.variant().contains(" shards, ") ? "_shards" : "")
                    + (l.variant().endsWith(" " + report.options.keys + " keys") || l.variant().equals(report.options.keys + " keys")
                    ? "" : "_keys_" + l.variant().replaceAll("\\D", ""));
            csvLine(out, "latency", s, 1, "offered_per_s", l.offeredRate());
            csvLine(out, "latency", s, 1, "written_per_s", Report.fmt("%.1f", l.achievedRate()));
            csvLine(out, "latency", s, 1, "writers_kept_up", l.writersKeptUp());
            csvLine(out, "latency", s, 1, "acked_per_s", Report.fmt("%.1f", l.ackRate()));
            csvLine(out, "latency", s, 1, "records_per_tx", l.recordsPerTx());
            csvLine(out, "latency", s, 1, "measured_records", l.measured());
            csvLine(out, "latency", s, 1, "unacknowledged", l.unacknowledged());
            Map<String, LatencyScenario.Stats> all = new LinkedHashMap<>();
            all.put("commit_to_ack", l.commitToAck());
            all.put("scheduled_to_ack", l.scheduledToAck());
            all.put("commit_to_consume", l.commitToConsume());
            all.forEach((metric, st) -> {
                csvLine(out, "latency", s, 1, metric + "_p50_ms", Report.fmt("%.3f", st.p50()));
                csvLine(out, "latency", s, 1, metric + "_p99_ms", Report.fmt("%.3f", st.p99()));
                csvLine(out, "latency", s, 1, metric + "_p999_ms", Report.fmt("%.3f", st.p999()));
                csvLine(out, "latency", s, 1, metric + "_max_ms", Report.fmt("%.3f", st.max()));
            });
            csvLine(out, "latency", s, 1, "backlog_max", l.backlogMax());
            csvLine(out, "latency", s, 1, "backlog_end", l.backlogEnd());
            csvLine(out, "latency", s, 1, "backlog_growth_per_s", Report.fmt("%.1f", l.backlogSlope()));
            csvLine(out, "latency", s, 1, "sustainable", l.sustainable());
        }
        int i = 0;
        String last = "";
        for (TakeoverScenario.Result t : report.takeover) {
            String scenario = Report.electionPrefix(t.election()) + t.mode();
            i = scenario.equals(last) ? i + 1 : 1;
            last = scenario;
            csvLine(out, "takeover", scenario, i, "leader_acquired_s", Report.fmt("%.3f", t.leaderAcquired()));
            csvLine(out, "takeover", scenario, i, "first_ack_s", Report.fmt("%.3f", t.firstAck()));
            csvLine(out, "takeover", scenario, i, "rows_left", t.rowsLeft());
        }
        for (ShardedTakeoverScenario.Result r : report.shardTakeover) {
            String shards = Report.electionPrefix(r.election()) + "shards";
            csvLine(out, "takeover", shards, r.run(), "others_quiet_p99_ms", Report.fmt("%.2f", r.quietOthers().p99()));
            csvLine(out, "takeover", shards, r.run(), "others_takeover_p99_ms",
                    Report.fmt("%.2f", r.takeoverOthers().p99()));
            csvLine(out, "takeover", shards, r.run(), "others_p99_ratio", Report.fmt("%.3f", r.p99Ratio()));
            csvLine(out, "takeover", shards, r.run(), "others_move_p99_ms", Report.fmt("%.2f", r.moveOthers().p99()));
            csvLine(out, "takeover", shards, r.run(), "others_move_p99_ratio", Report.fmt("%.3f", r.moveP99Ratio()));
            csvLine(out, "takeover", shards, r.run(), "killed_takeover_max_ms", Report.fmt("%.1f", r.takeoverOwn().max()));
            csvLine(out, "takeover", shards, r.run(), "moved_s", Report.fmt("%.3f", r.movedAfter()));
            csvLine(out, "takeover", shards, r.run(), "killed_acking_s", Report.fmt("%.3f", r.ownFirstAck()));
            csvLine(out, "takeover", shards, r.run(), "acks_unreported", r.unreported());
            csvLine(out, "takeover", shards, r.run(), "duplicates", r.duplicates());
        }
        for (InboxScenario.Result r : report.inbox) {
            String name = r.consumer().startsWith("bare") ? "bare_" + (r.consumer().contains("before") ? "before"
                    : "after") : "inbox";
            csvLine(out, "consumer", name, 1, "records_per_s", Report.fmt("%.1f", r.rate()));
            csvLine(out, "consumer", name, 1, "records", r.records());
        }
        return out.toString();
    }

    private static void csvLine(StringBuilder out, String section, String scenario, Object run, String metric,
                                Object value) {
        out.append(section).append(',').append(scenario).append(',').append(run).append(',').append(metric)
                .append(',').append(value).append('\n');
    }

    /** The user and the masked password of an existing database (--db-url), for the text report. */
    /** @return the tree of results.json: the machine and settings ({@code meta}), then one node per section */
    Map<String, Object> json() {
        Map<String, Object> root = new LinkedHashMap<>();
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("started", String.valueOf(report.startedAt));
        meta.put("finished", String.valueOf(report.finishedAt));
        meta.put("command", report.options.command);
        Map<String, Object> machine = new LinkedHashMap<>();
        machine.put("cores", Machine.cores());
        machine.put("cpu", Machine.cpu());
        machine.put("memoryMiB", Machine.memoryMiB());
        machine.put("os", Machine.os());
        machine.put("java", Machine.java());
        machine.put("maxHeapMiB", Machine.maxHeapMiB());
        machine.put("loadAverageAtStart", report.loadAtStart);
        machine.put("loadAverageAtEnd", report.loadAtEnd);
        meta.put("machine", machine);
        meta.put("database", report.database);
        if (report.options.dbUrl != null) {
            meta.put("databaseUser", report.options.dbUser);
            meta.put("databasePassword", report.options.maskedPassword());
        }
        meta.put("databaseSettings", report.databaseSettings);
        meta.put("broker", report.kafka);
        meta.put("partitions", report.options.partitions);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("markBatchSize", report.dispatcher.markBatchSize());
        d.put("maxInFlightRecords", report.dispatcher.maxInFlightRecords());
        d.put("maxInFlightBytes", report.dispatcher.maxInFlightBytes());
        d.put("purgeBatchSize", report.dispatcher.purgeBatchSize());
        d.put("all", report.dispatcher.toString());
        meta.put("dispatcher", d);
        meta.put("producer", report.producer);
        Map<String, Object> workload = new LinkedHashMap<>();
        workload.put("rows", report.options.rows);
        workload.put("naiveRows", Math.min(report.options.naiveRows, report.options.rows));
        workload.put("valueBytes", report.options.valueBytes);
        workload.put("keys", report.options.keys);
        workload.put("repeat", report.options.repeat);
        workload.put("warmupRows", report.options.warmupRows);
        meta.put("workload", workload);
        root.put("meta", meta);

        List<Object> writers = new ArrayList<>();
        for (WriterCostBenchmark.Cell c : report.writerCost) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("round", c.round());
            m.put("synchronousCommit", c.sync());
            m.put("messagesPerTransaction", c.messages());
            m.put("table", c.table());
            m.put("tableNotify", c.notifying());
            m.put("wal", c.wal());
            writers.add(m);
        }
        root.put("writerCost", writers);

        Map<String, Object> tp = new LinkedHashMap<>();
        report.throughput.forEach((scenario, runs) -> {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("medianRecordsPerSecond", report.medianRate(scenario));
            if (report.throughput.containsKey("drain")) {
                s.put("dispatcherRatio", report.ratio(scenario));
            }
            List<Object> list = new ArrayList<>();
            for (ThroughputScenarios.Run r : runs) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("recordsPerSecond", r.rate());
                m.put("records", r.records());
                m.put("seconds", r.seconds());
                m.put("rowsLeft", r.left());
                m.put("fillSeconds", r.fillSeconds());
                if (!r.breakdown().isEmpty()) {
                    m.put("breakdown", r.breakdown());
                }
                list.add(m);
            }
            s.put("runs", list);
            tp.put(scenario, s);
        });
        root.put("throughput", tp);

        List<Object> lat = new ArrayList<>();
        for (LatencyScenario.Result l : report.latency) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("variant", l.variant());
            m.put("offeredPerSecond", l.offeredRate());
            m.put("writtenPerSecond", l.achievedRate());
            m.put("writersKeptUp", l.writersKeptUp());
            m.put("ackedPerSecond", l.ackRate());
            m.put("recordsPerTransaction", l.recordsPerTx());
            m.put("writers", l.writers());
            m.put("measuredRecords", l.measured());
            m.put("unacknowledged", l.unacknowledged());
            m.put("commitToAckMs", statsJson(l.commitToAck()));
            m.put("commitToSendMs", statsJson(l.commitToSend()));
            m.put("sendToAckMs", statsJson(l.sendToAck()));
            m.put("scheduledToAckMs", statsJson(l.scheduledToAck()));
            m.put("commitToConsumeMs", statsJson(l.commitToConsume()));
            m.put("backlogMax", l.backlogMax());
            m.put("backlogEnd", l.backlogEnd());
            m.put("backlogGrowthPerSecond", l.backlogSlope());
            m.put("sustainable", l.sustainable());
            m.put("tailDrainSeconds", l.drainAfterSeconds());
            m.put("poisonSendsFailed", l.poisonFailures());
            lat.add(m);
        }
        root.put("latency", lat);

        List<Object> to = new ArrayList<>();
        for (TakeoverScenario.Result t : report.takeover) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("mode", t.mode());
            m.put("leaderAcquiredSeconds", t.leaderAcquired());
            m.put("firstAckSeconds", t.firstAck());
            m.put("rowsLeft", t.rowsLeft());
            to.add(m);
        }
        root.put("takeover", to);

        List<Object> st = new ArrayList<>();
        for (ShardedTakeoverScenario.Result r : report.shardTakeover) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("run", r.run());
            m.put("killedShards", r.killedShards());
            m.put("othersQuietMs", statsJson(r.quietOthers()));
            m.put("othersTakeoverMs", statsJson(r.takeoverOthers()));
            m.put("othersP99Ratio", r.p99Ratio());
            m.put("othersMoveMs", statsJson(r.moveOthers()));
            m.put("othersMoveP99Ratio", r.moveP99Ratio());
            m.put("killedQuietMs", statsJson(r.quietOwn()));
            m.put("killedTakeoverMs", statsJson(r.takeoverOwn()));
            m.put("movedSeconds", r.movedAfter());
            m.put("killedAckingSeconds", r.ownFirstAck());
            m.put("committed", r.committed());
            m.put("acksUnreported", r.unreported());
            m.put("duplicates", r.duplicates());
            st.add(m);
        }
        root.put("shardTakeover", st);

        List<Object> consumers = new ArrayList<>();
        for (InboxScenario.Result r : report.inbox) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("consumer", r.consumer());
            m.put("recordsPerSecond", r.rate());
            m.put("records", r.records());
            consumers.add(m);
        }
        root.put("consumers", consumers);

        List<Object> goals = new ArrayList<>();
        for (String[] g : report.goals()) {
            goals.add(Map.of("goal", g[0], "measured", g[1], "verdict", g[2]));
        }
        root.put("goals", goals);
        return root;
    }

    private static Map<String, Object> statsJson(LatencyScenario.Stats s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("count", s.count());
        m.put("p50", s.p50());
        m.put("p99", s.p99());
        m.put("p999", s.p999());
        m.put("max", s.max());
        return m;
    }
}
