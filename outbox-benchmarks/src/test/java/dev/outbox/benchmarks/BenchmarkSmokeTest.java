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
                "--rates", "500", "--duration", "1.5", "--latency-warmup", "0.5", "--writers", "2",
                "--takeover-modes", "close", "--takeover-repeat", "1", "--takeover-rate", "200",
                "--out", out.toString()});

        Report report = Benchmark.run(options);

        assertThat(report.throughput).containsOnlyKeys("drain", "drain-mark", "database", "cursor", "broker",
                "naive");
        for (List<ThroughputScenarios.Run> runs : report.throughput.values()) {
            assertThat(runs).hasSize(1);
            assertThat(runs.get(0).rate()).isPositive();
        }
        assertThat(report.throughput.get("drain").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain").get(0).left()).isZero();
        assertThat(report.throughput.get("drain-mark").get(0).records()).isEqualTo(3000);
        assertThat(report.throughput.get("drain-mark").get(0).left()).isZero();
        assertThat(report.throughput.get("database").get(0).left()).isZero();
        assertThat(report.throughput.get("cursor").get(0).left()).isZero();
        assertThat(report.throughput.get("naive").get(0).left()).isZero();
        assertThat(report.latency).as("--rates 500 with each harvest, then the poison scenario without and with the"
                + " poison key").hasSize(4).allSatisfy(l -> {
            assertThat(l.unacknowledged()).isZero();
            assertThat(l.commitToAck().count()).isPositive();
        });
        assertThat(report.takeover).singleElement().satisfies(t -> assertThat(t.firstAck()).isPositive());
        assertThat(report.inbox).as("bare consumer, inbox consumer, bare consumer").hasSize(3).allSatisfy(r -> {
            assertThat(r.records()).isEqualTo(3000 + options.partitions);
            assertThat(r.rate()).isPositive();
        });
        assertThat(report.latency.get(1).variant()).startsWith(LatencyScenario.MARK_VARIANT);
        assertThat(report.latency.get(3).poisoned()).isTrue();
        assertThat(report.latency.get(3).poisonFailures()).isPositive();
        assertThat(report.text()).contains("Dispatcher -> Kafka (cursor harvest)", "(mark harvest)",
                "database ceiling", "read+purge",
                "poison key", "Goals");
        assertThat(out.resolve("results.txt")).exists();
        assertThat(Files.readString(out.resolve("results.csv"))).startsWith("section,scenario,run,metric,value\n")
                .contains("throughput,drain,1,records_per_s,", "consumer,inbox,1,records_per_s,");
        assertThat(Files.readString(out.resolve("results.json"))).contains("\"throughput\"", "\"dispatcherRatio\"");
    }
}
