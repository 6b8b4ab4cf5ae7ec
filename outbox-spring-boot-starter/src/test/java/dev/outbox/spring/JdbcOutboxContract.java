package dev.outbox.spring;

import dev.outbox.testkit.Capabilities;

import dev.outbox.DispatcherHealth;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.spi.Store;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.testkit.Await;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.IllegalTransactionStateException;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What every database's {@code @SpringBootTest} checks, with an orders service on JdbcTemplate and a
 * DataSourceTransactionManager: subclasses start the application against their real database and Kafka.
 */
abstract class JdbcOutboxContract {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Autowired
    JdbcOrders orders;
    @Autowired
    OutboxPublisher publisher;
    @Autowired
    Store store;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    OutboxDispatcherLifecycle lifecycle;
    @Autowired
    OutboxHealthIndicator health;
    @Autowired
    MeterRegistry meters;

    abstract String bootstrapServers();

    @Test
    void aCommittedMethodPublishesItsMessageAsJsonAndARolledBackOneNothing() {
        // The tests of a JVM share the broker and the topic: this class's messages carry a key of its own.
        String customer = getClass().getSimpleName();
        orders.place(1, customer, false);
        assertThatThrownBy(() -> orders.place(2, customer, true)).isInstanceOf(IllegalStateException.class);
        orders.place(3, customer, false);

        try (TopicReader reader = new TopicReader(bootstrapServers(), "orders")) {
            // Same key, so one partition: order 2, had it been published, would come before order 3.
            List<ConsumerRecord<String, String>> got = reader.readUntil(r -> r.stream()
                    .anyMatch(c -> customer.equals(c.key()) && c.value().contains("\"orderId\":3")), TIMEOUT)
                    .stream().filter(c -> customer.equals(c.key())).toList();
            assertThat(got).extracting(ConsumerRecord::value).containsExactly(
                    "{\"orderId\":1,\"customer\":\"" + customer + "\"}",
                    "{\"orderId\":3,\"customer\":\"" + customer + "\"}");
            assertThat(new String(got.get(0).headers().lastHeader("content-type").value(), StandardCharsets.UTF_8))
                    .isEqualTo("application/json");
        }
        assertThat(jdbc.queryForList("SELECT id FROM orders ORDER BY id", Long.class)).containsExactly(1L, 3L);
        Await.untilOrFail(() -> Capabilities.gauges(store).backlog() == 0, TIMEOUT, () -> "outbox purged, backlog " + Capabilities.gauges(store).backlog());
    }

    @Test
    void aPublishOutsideATransactionFailsClearlyAndWritesNothing() {
        long before = Capabilities.gauges(store).backlog();

        assertThatThrownBy(() -> publisher.publish("orders", "customer-x", "no transaction"))
                .isInstanceOf(IllegalTransactionStateException.class)
                .hasMessageContaining("No transaction is active")
                .hasMessageContaining("outbox.publisher.require-transaction");
        assertThat(Capabilities.gauges(store).backlog()).isLessThanOrEqualTo(before);
    }

    @Test
    void theLeaderIsHealthyAndItsMetersAreRegistered() {
        Await.untilOrFail(() -> lifecycle.dispatcher().isLeader(), TIMEOUT, () -> "this instance leads");
        Health h = health.health();
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails()).containsEntry("status", DispatcherHealth.Status.LEADER.name())
                .containsKey("leaderId");
        assertThat(meters.find(OutboxMetrics.LEADER).gauge()).isNotNull();
        assertThat(meters.find(OutboxMetrics.LEADER).gauge().value()).isEqualTo(1.0);
        assertThat(lifecycle.isRunning()).isTrue();
    }
}
