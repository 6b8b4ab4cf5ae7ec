package dev.outbox.benchmarks;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Proves that the benchmark harness runs end to end on a tiny workload; it measures nothing worth reading (the
 * real run is {@code ./bench.sh}, see docs/readme/performance.md).
 */
class BenchmarkSmokeTest {

    @Test
    void runsEveryScenarioOnATinyWorkload() throws Exception {
        Path out = Path.of("target", "benchmark-smoke");
        BenchmarkOptions options = BenchmarkOptions.parse(new String[] {
                "--rows", "3000", "--naive-rows", "100", "--repeat", "1", "--warmup-rows", "0",
                "--rates", "500", "--duration", "1.5", "--writer-cost-seconds", "0.05", "--latency-warmup", "0.5", "--latency-jit-warmup", "0.5", "--writers", "2",
                "--takeover-modes", "close", "--takeover-repeat", "1", "--takeover-rate", "200",
                "--takeover-window", "2", "--takeover-warmup", "0.5",
                "--out", out.toString()});

        Report report = Benchmark.run(options);

        assertThat(report.throughput).containsOnlyKeys("drain", "drain-txn", "drain-eos", "drain-unfenced", "drain-mark", "drain-wal",
                "drain-handlers", "drain-rabbitmq", "drain-shards", "drain-shards-2", "database", "cursor", "wal-ceiling",
                "broker", "broker-rabbitmq", "naive");
        for (List<ThroughputScenarios.Run> runs : report.throughput.values()) {
            assertThat(runs).hasSize(1);
            assertThat(runs.get(0).rate()).isPositive();
        }
        assertThat(report.throughput.get("drain").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-mark").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-txn").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-txn").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-eos").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-eos").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-rabbitmq").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-rabbitmq").get(0).left()).isZero();
        assertThat(report.throughput.get("broker-rabbitmq").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-mark").get(0).left()).isZero();
        for (String sharded : List.of("drain-shards", "drain-shards-2")) {
            assertThat(report.throughput.get(sharded).get(0).records()).as(sharded).isEqualTo(3000);
            assertThat(report.throughput.get(sharded).get(0).left()).as(sharded).isZero();
        }
        assertThat(report.throughput.get("drain-shards-2").get(0).breakdown())
                .containsPattern("acknowledged by each Dispatcher: [1-9][0-9]*, [1-9]");
        assertThat(report.throughput.get("database").get(0).left()).isZero();
        assertThat(report.throughput.get("cursor").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-wal").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-wal").get(0).left()).as("left in the slot").isZero();
        assertThat(report.throughput.get("wal-ceiling").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("wal-ceiling").get(0).left()).as("left in the slot").isZero();
        assertThat(report.writerCost).as("warm-up and one round: sync off/on x 1, 10 messages").hasSize(8)
                .allSatisfy(c -> {
                    assertThat(c.wal().commitsPerSecond()).isPositive();
                    assertThat(c.notifying().commitsPerSecond()).isPositive();
                });
        assertThat(report.throughput.get("naive").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-handlers").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-handlers").get(0).left()).isZero();
        assertThat(report.latency).as("--rates 500 with each harvest (cursor, transactional producer, exactly once,"
                + " WAL, in-process handlers, RabbitMQ, polling, mark), then the poison scenario without and with the"
                + " poison key").hasSize(10).allSatisfy(l -> {
            assertThat(l.unacknowledged()).isZero();
            assertThat(l.commitToAck().count()).isPositive();
        });
        assertThat(report.takeover).as("a clean hand-over with each election, Kafka's first")
                .extracting(TakeoverScenario.Result::election).containsExactly("kafka", "database");
        assertThat(report.takeover).allSatisfy(t -> assertThat(t.firstAck()).isPositive());
        assertThat(report.shardTakeover).as("a sharded take-over with each election")
                .extracting(ShardedTakeoverScenario.Result::election).containsExactly("kafka", "database");
        assertThat(report.shardTakeover).allSatisfy(t -> {
            assertThat(t.killedShards()).as("shards the killed Dispatcher led").isPositive();
            assertThat(t.unreported()).as("acknowledged by the killed JVM, unreported").isNotNegative();
            assertThat(t.quietOthers().count()).isPositive();
            assertThat(t.takeoverOthers().count()).isPositive();
            assertThat(t.moveOthers().count()).as("others committed around the move").isPositive();
        });
        assertThat(report.inbox).as("bare consumer, inbox consumer, bare consumer").hasSize(3).allSatisfy(r -> {
            assertThat(r.records()).isEqualTo(3000 + options.partitions);
            assertThat(r.rate()).isPositive();
        });
        assertThat(report.latency.get(1).variant()).startsWith(LatencyScenario.TXN_VARIANT);
        assertThat(report.latency.get(2).variant()).startsWith(LatencyScenario.TXN_VARIANT + LatencyScenario.EOS_VARIANT);
        assertThat(report.latency.get(3).variant()).startsWith(LatencyScenario.WAL_VARIANT);
        assertThat(report.latency.get(4).variant()).startsWith(LatencyScenario.HANDLERS_VARIANT);
        assertThat(report.latency.get(4).commitToConsume().count()).as("handled").isPositive();
        assertThat(report.latency.get(5).variant()).startsWith(LatencyScenario.RABBITMQ_VARIANT);
        assertThat(report.latency.get(5).commitToConsume().count()).as("consumed from RabbitMQ")
                .isEqualTo(report.latency.get(5).measured());
        assertThat(report.latency.get(6).variant()).startsWith(LatencyScenario.POLL_VARIANT);
        assertThat(report.latency.get(7).variant()).startsWith(LatencyScenario.MARK_VARIANT);
        assertThat(report.latency.get(9).poisoned()).isTrue();
        assertThat(report.latency.get(9).poisonFailures()).isPositive();
        assertThat(report.text()).contains("Writer cost", "table INSERT", "WAL emit", "wal_level=logical",
                "synchronous_commit=on", "Dispatcher -> Kafka (cursor harvest)", "(mark harvest)", "(WAL harvest)",
                "WAL ceiling", "Dispatcher -> in-process handlers",
                "database ceiling", "read+purge",
                "poison key", "Sharded take-over", "SqlLeaderTransport", "release lease)", "Goals");
        assertThat(out.resolve("results.txt")).exists();
        assertThat(Files.readString(out.resolve("results.csv"))).startsWith("section,scenario,run,metric,value\n")
                .contains("throughput,drain,1,records_per_s,", "throughput,drain-wal,1,records_per_s,",
                        "latency,rate_500_wal,1,commit_to_ack_p50_ms,", "latency,rate_500_poll,1,commit_to_ack_p50_ms,",
                        "latency,rate_500_txn,1,commit_to_ack_p50_ms,", "latency,rate_500_txn_eos,1,commit_to_ack_p50_ms,",
                        "latency,rate_500_handlers,1,commit_to_ack_p50_ms,",
                        "latency,rate_500_rabbitmq,1,commit_to_ack_p50_ms,", "throughput,drain-handlers,1,records_per_s,",
                        "writer_cost,sync_on_n_10,1,wal_commits_per_s,", "writer_cost,sync_on_n_10,1,table_notify_commits_per_s,",
                        "consumer,inbox,1,records_per_s,", "takeover,close,1,first_ack_s,",
                        "takeover,database-close,1,first_ack_s,", "takeover,database-shards,1,moved_s,");
        assertThat(Files.readString(out.resolve("results.json"))).contains("\"throughput\"", "\"dispatcherRatio\"",
                "\"writerCost\"");
    }
}
