package dev.outbox.benchmarks;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** Proves that the writer-cost comparison runs end to end on tiny cells; it measures nothing worth reading. */
class WriterCostBenchmarkSmokeTest {

    @Test
    void comparesTheTableAndTheWalWriter() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            WriterCostBenchmark.run("smoke", 0.05, 0, out);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);

        assertThat(text).contains("command: smoke", "wal_level=logical", "table INSERT", "WAL emit",
                "server µs", "JVM µs");
        assertThat(text.lines().filter(line -> line.startsWith("warm "))).hasSize(4); // sync off/on × n = 1, 10
    }
}
