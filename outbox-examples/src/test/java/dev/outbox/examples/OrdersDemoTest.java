package dev.outbox.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** A short run of the demo on the embedded servers: it must pass, with a take-over. */
class OrdersDemoTest {

    @Test
    void aShortRunDeliversEveryOrderInOrderAcrossATakeOver() throws Exception {
        DemoOptions options = new DemoOptions(null, null, null, null, Duration.ofSeconds(4), 400, 2, 50, 2, 3,
                "demo-test-" + UUID.randomUUID(), true, Duration.ofSeconds(60));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DemoSummary summary;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            summary = new OrdersDemo(options, out).run();
        } finally {
            System.out.println(bytes.toString(StandardCharsets.UTF_8));
        }

        assertThat(summary.written()).as("orders written").isPositive();
        assertThat(summary.missing()).as("missing").isZero();
        assertThat(summary.violations()).as("out of order").isZero();
        assertThat(summary.distinct()).as("distinct records read").isEqualTo(summary.written());
        assertThat(summary.takeoverMillis()).as("take-over measured").isNotNegative();
        assertThat(summary.backlog()).as("rows left").isZero();
        assertThat(summary.passed()).isTrue();
        assertThat(bytes.toString(StandardCharsets.UTF_8)).contains("is now the LEADER", "per-key order verified",
                "PASS");
    }
}
