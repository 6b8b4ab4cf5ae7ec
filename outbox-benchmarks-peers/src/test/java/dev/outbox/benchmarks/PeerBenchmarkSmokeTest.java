package dev.outbox.benchmarks;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Proves that the side-by-side run works end to end on a tiny workload: our two harvests and both peers' child JVMs
 * at one rate, every system's backlog drain (Modulith's: publications left incomplete by a killed application), and
 * every system's crash run (ours with a standby and the take-over scenario's fast timings, so that the lease lapses in
 * about 5 s rather than 15 s). It measures nothing worth reading (the real run is
 * {@code ./bench.sh --scenarios peers}, see docs/performance/index.md).
 */
class PeerBenchmarkSmokeTest {

    @Test
    void runsEverySystemAndEveryCrashRunOnATinyWorkload() throws Exception {
        Path out = Path.of("target", "peers-smoke");
        PeerBenchmark b = PeerBenchmark.run(new String[] {
                "--scenarios", "peers", "--rates", "200", "--duration", "0.5", "--latency-warmup", "0.2",
                "--latency-jit-warmup", "0", "--writers", "2", "--crash-rate", "200", "--crash-seconds", "2",
                "--drain-rows", "500", "--crash-fast-failover",
                "--out", out.toString()});

        assertThat(b.lines).extracting(PeerBenchmark.Line::system)
                .containsExactly("cursor", "wal", "modulith", "debezium");
        assertThat(b.lines).allSatisfy(l -> {
            assertThat(l.missing()).as(l.system()).isZero();
            assertThat(l.measured()).as(l.system()).isPositive();
            assertThat(l.consumeP50()).as(l.system()).isPositive();
        });
        assertThat(b.drains).extracting(PeerBenchmark.Drain::system)
                .containsExactlyInAnyOrder("cursor", "bare", "wal", "modulith", "debezium");
        assertThat(b.drains).allSatisfy(d -> {
            assertThat(d.records()).as(d.system()).isEqualTo(500);
            assertThat(d.left()).as(d.system()).isZero();
            assertThat(d.rate()).as(d.system()).isPositive();
        });
        assertThat(b.crashes).extracting(PeerBenchmark.Crash::system)
                .containsExactly("cursor", "wal", "modulith", "debezium");
        assertThat(b.crashes).allSatisfy(c -> {
            assertThat(c.committed()).as(c.system()).isPositive();
            assertThat(c.lost()).as(c.system() + ": at-least-once").isZero();
        });
        // Ours keeps per-key order across a SIGKILL and a take-over (the peers' counts are what they are).
        assertThat(b.crashes).filteredOn(c -> c.system().equals("cursor") || c.system().equals("wal"))
                .allSatisfy(c -> {
                    assertThat(c.outOfOrder()).as(c.system() + ": per-key order").isZero();
                    assertThat(c.restartSeconds()).as(c.system() + ": the new leader published").isPositive();
                });
        assertThat(b.text).contains("commit->consume", "Crash run", "Backlog drain", "Settings",
                "transforms.outbox.type", "spring.modulith.events.republish-outstanding-events-on-restart",
                "cursor (crash run)", "SqlLeaderTransport", "drain's backlog");
        assertThat(Files.readString(out.resolve("results-peers.txt"))).isEqualTo(b.text);
    }
}
