package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The delivery options through the starter's auto-configured beans, on an embedded PostgreSQL and an in-process
 * Kafka: {@code outbox.store.scheduling} and {@code outbox.store.idempotency.*} on, the option tables created by the
 * shipped Flyway migrations (their placeholders filled in by the starter for the table {@code delivery}), messages
 * written through {@link OutboxPublisher} in Spring transactions and published by the auto-configured dispatcher.
 */
@SpringBootTest(classes = TestApplication.class)
class DeliveryOptionsPostgresTest {
    private static final KafkaServer KAFKA = TestServers.kafka();
    private static final String TOPIC = "delivery-options";
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Autowired
    OutboxPublisher outbox;
    @Autowired
    TransactionTemplate transaction;
    @Autowired
    JdbcTemplate jdbc;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_delivery_options");
        KAFKA.createTopic(TOPIC, 1);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-delivery-options-leader");
        registry.add("outbox.dispatcher.poll-interval", () -> "200ms");
        registry.add("outbox.store.table", () -> "delivery");
        registry.add("outbox.store.scheduling", () -> "true");
        registry.add("outbox.store.idempotency.retention", () -> "7d");
        registry.add("spring.flyway.enabled", () -> "true");
        registry.add("spring.flyway.locations", () -> "classpath:dev/outbox/migrations/versioned/postgresql,"
                + "classpath:dev/outbox/migrations/versioned/postgresql-scheduling,"
                + "classpath:dev/outbox/migrations/versioned/postgresql-idempotency");
    }

    @Test
    void theMigrationsCreatedTheOptionTablesUnderTheStoresNames() {
        assertThat(jdbc.queryForList("SELECT indexname FROM pg_indexes WHERE tablename = 'delivery_scheduled'"
                + " ORDER BY indexname", String.class))
                .containsExactly("delivery_scheduled_due", "delivery_scheduled_key", "delivery_scheduled_pkey");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM delivery_idempotency", Long.class)).isZero();
    }

    /**
     * Written with a 5 s delay once the dispatcher publishes (a first message went out): absent while a message
     * written after it, without a delay, has been published and the database's clock is before its due time;
     * published after its due time.
     */
    @Test
    void aDelayedMessageIsNotPublishedBeforeItsTime() {
        String key = "delayed-" + UUID.randomUUID();
        String marker = "marker-" + UUID.randomUUID();
        String warmUp = "warm-up-" + UUID.randomUUID();
        transaction.executeWithoutResult(s -> outbox.publish(TOPIC, warmUp, "first"));
        try (TopicReader reader = new TopicReader(KAFKA.bootstrapServers(), TOPIC)) {
            reader.readUntil(r -> r.stream().anyMatch(c -> warmUp.equals(c.key())), TIMEOUT);
        }
        transaction.executeWithoutResult(s -> outbox.publish(outbox.message(TOPIC, key, "later")
                .deliverAfter(Duration.ofSeconds(5)).build()));
        Instant due = jdbc.queryForObject("SELECT due_at FROM delivery_scheduled WHERE key = ?", Timestamp.class, key)
                .toInstant();
        transaction.executeWithoutResult(s -> outbox.publish(TOPIC, marker, "now"));

        try (TopicReader reader = new TopicReader(KAFKA.bootstrapServers(), TOPIC)) {
            List<ConsumerRecord<String, String>> first = reader.readUntil(
                    r -> r.stream().anyMatch(c -> marker.equals(c.key())), TIMEOUT);
            Instant databaseNow = jdbc.queryForObject("SELECT now()", Timestamp.class).toInstant();
            assertThat(databaseNow).as("checked before the due time").isBefore(due);
            assertThat(first).noneMatch(c -> key.equals(c.key()));

            ConsumerRecord<String, String> delayed = reader.readUntil(
                    r -> r.stream().anyMatch(c -> key.equals(c.key())), TIMEOUT).stream()
                    .filter(c -> key.equals(c.key())).findFirst().orElseThrow();
            // the producer's timestamp, on this machine's clock (the embedded database's too)
            assertThat(Instant.ofEpochMilli(delayed.timestamp())).as("sent at, due at " + due)
                    .isAfterOrEqualTo(due.minusMillis(1));
            assertThat(delayed.value()).isEqualTo("\"later\"");
        }
    }

    @Test
    void aSecondMessageWithTheSameIdempotencyKeyIsSkipped() {
        String key = "idempotent-" + UUID.randomUUID();
        String idempotencyKey = "order-created-" + UUID.randomUUID();
        transaction.executeWithoutResult(s -> outbox.publish(outbox.message(TOPIC, key, "first")
                .idempotencyKey(idempotencyKey).build()));
        transaction.executeWithoutResult(s -> outbox.publish(outbox.message(TOPIC, key, "second")
                .idempotencyKey(idempotencyKey).build()));
        transaction.executeWithoutResult(s -> outbox.publish(TOPIC, key, "after"));

        try (TopicReader reader = new TopicReader(KAFKA.bootstrapServers(), TOPIC)) {
            List<String> values = reader.readUntil(r -> r.stream()
                            .anyMatch(c -> key.equals(c.key()) && c.value().equals("\"after\"")), TIMEOUT).stream()
                    .filter(c -> key.equals(c.key())).map(ConsumerRecord::value).toList();
            assertThat(values).containsExactly("\"first\"", "\"after\"");
        }
        assertThat(jdbc.queryForObject("SELECT count(*) FROM delivery_idempotency WHERE idempotency_key = ?",
                Long.class, idempotencyKey)).isEqualTo(1);
    }
}
