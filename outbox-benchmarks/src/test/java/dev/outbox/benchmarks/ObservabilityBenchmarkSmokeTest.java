package dev.outbox.benchmarks;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Proves that the observability comparison runs end to end on a tiny workload; it measures nothing worth reading.
 * Tagged slow (25–45 s): the build leaves it out to keep within its 20 minutes; {@code -DexcludedGroups=} runs it.
 */
@Tag("slow")
class ObservabilityBenchmarkSmokeTest {

    @Test
    void comparesTheDrainWithoutAndWithObservability() throws Exception {
        Path out = Path.of("target", "benchmark-observability-smoke");
        BenchmarkOptions options = BenchmarkOptions.parse(new String[] {
                "--rows", "2000", "--repeat", "1", "--warmup-rows", "0", "--out", out.toString()});

        String text = ObservabilityBenchmark.run(options);

        assertThat(text).contains("drain, no observability", "drain, OutboxMetrics + traceparent on every row",
                "drain, OutboxMetrics ", "drain, OutboxMetrics + 66 more value bytes",
                "rate cost (1 - on / off, medians)", "rate cost per run", "CPU of this JVM per record",
                "CPU of the Postgres server per record", "CPU of both per record", "TracingMessageDecorator.decorate");
        assertThat(out.resolve("observability.txt")).exists();
    }
}
