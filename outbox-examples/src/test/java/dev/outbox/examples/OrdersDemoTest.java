package dev.outbox.examples;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Short runs of the demo: on the embedded servers with a take-over, then again on the same, now "existing" ones. */
class OrdersDemoTest {

    @Test
    void aShortRunDeliversEveryOrderInOrderAcrossATakeOverAndASecondRunCountsOnlyItsOwnRecords() throws Exception {
        String topic = "demo-test-" + UUID.randomUUID();
        DemoOptions embedded = new DemoOptions(null, null, null, null, Duration.ofSeconds(4), 400, 2, 50, 2, 3,
                topic, true, Duration.ofSeconds(60), "kafka");

        Run first = run(embedded);

        assertThat(first.summary.written()).as("orders written").isPositive();
        assertThat(first.summary.missing()).as("missing").isZero();
        assertThat(first.summary.violations()).as("out of order").isZero();
        assertThat(first.summary.distinct()).as("distinct records read").isEqualTo(first.summary.written());
        assertThat(first.summary.takeoverMillis()).as("take-over measured").isNotNegative();
        assertThat(first.summary.backlog()).as("rows left").isZero();
        assertThat(first.summary.passed()).isTrue();
        assertThat(first.output).contains("(embedded) ready", "is now the LEADER", "per-key order verified", "PASS");

        // The same servers given by address, as a user points the demo at real ones: the schema, tables and topic
        // exist already, the customers have placed orders before, and only this run's records count.
        JdbcServer postgres = TestServers.postgres();
        DemoOptions existing = new DemoOptions(postgres.jdbcUrl(), postgres.username(), postgres.password(),
                TestServers.kafka().bootstrapServers(), Duration.ofSeconds(2), 300, 2, 50, 1, 3, topic, false,
                Duration.ofSeconds(60), "kafka");

        Run second = run(existing);

        assertThat(second.summary.passed()).as("second run passed").isTrue();
        assertThat(second.summary.distinct()).isEqualTo(second.summary.written());
        assertThat(second.output).contains("Using PostgreSQL at " + postgres.jdbcUrl(), "topic " + topic + " exists",
                "not measured (one dispatcher)");
    }

    /** ./demo.sh --election database: the dispatchers elect their leader by a lease in Postgres, with a take-over. */
    @Test
    void aShortRunWithTheLeaderElectedInTheDatabaseDeliversEveryOrderInOrderAcrossATakeOver() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        DemoOptions options = new DemoOptions(postgres.jdbcUrl(), postgres.username(), postgres.password(),
                TestServers.kafka().bootstrapServers(), Duration.ofSeconds(4), 400, 2, 50, 2, 3,
                "demo-test-db-" + UUID.randomUUID(), true, Duration.ofSeconds(60), "database");

        Run run = run(options);

        assertThat(run.summary.missing()).as("missing").isZero();
        assertThat(run.summary.violations()).as("out of order").isZero();
        assertThat(run.summary.takeoverMillis()).as("take-over measured").isNotNegative();
        assertThat(run.summary.passed()).isTrue();
        assertThat(run.output).contains("is now the LEADER", "PASS");
    }

    /** ./demo.sh --broker rabbitmq: RabbitMQ's per-key topology, the leader elected in Postgres, with a take-over. */
    @Test
    void aShortRunOnRabbitMqDeliversEveryOrderInOrderAcrossATakeOver() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        DemoOptions options = new DemoOptions(postgres.jdbcUrl(), postgres.username(), postgres.password(), null,
                Duration.ofSeconds(4), 400, 2, 50, 2, 3, "demo-test-rabbitmq-" + UUID.randomUUID(), true,
                Duration.ofSeconds(60), "database", "rabbitmq", TestServers.rabbitMq().uri().toString());

        Run run = run(options);

        assertThat(run.summary.written()).as("orders written").isPositive();
        assertThat(run.summary.missing()).as("missing").isZero();
        assertThat(run.summary.violations()).as("out of order").isZero();
        assertThat(run.summary.distinct()).as("distinct records read").isEqualTo(run.summary.written());
        assertThat(run.summary.takeoverMillis()).as("take-over measured").isNotNegative();
        assertThat(run.summary.backlog()).as("rows left").isZero();
        assertThat(run.summary.passed()).isTrue();
        assertThat(run.output).contains("-> RabbitMQ -> consumer", "single-active-consumer queues declared",
                "is now the LEADER", "PASS").doesNotContain("Kafka ");
    }

    private record Run(DemoSummary summary, String output) {
    }

    private static Run run(DemoOptions options) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DemoSummary summary;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            summary = new OrdersDemo(options, out).run();
        } finally {
            System.out.println(bytes.toString(StandardCharsets.UTF_8));
        }
        return new Run(summary, bytes.toString(StandardCharsets.UTF_8));
    }
}
