package dev.outbox.examples;

import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.OutboxRecord;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the README's inbox snippets ({@link InboxSnippets}) against a real Postgres and Kafka. */
class InboxSnippetsTest {

    @Test
    void theInboxAppliesAMessageOnceAndTheConsumerSkipsARedelivery() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        DataSource db = postgres.dataSource(postgres.createDatabase("readme_inbox"));
        execute(db, "CREATE TABLE invoices (order_id bigint NOT NULL)");
        PostgresInbox inbox = InboxSnippets.createInbox(db);

        UUID id = MessageIds.next();
        assertThat(InboxSnippets.process(db, inbox, id, 7)).isTrue();
        assertThat(InboxSnippets.process(db, inbox, id, 7)).as("the same message again").isFalse();
        assertThat(count(db)).isEqualTo(1);

        // Three partitions, as OrdersApplicationTest (same JVM, same broker) creates the topic.
        kafka.createTopic("order-events", 3);
        UUID orderMessage = MessageIds.next();
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            for (int copy = 0; copy < 2; copy++) { // published twice, as a crashed leader may
                broker.send(new OutboxRecord(1, Instant.now(), OutboxMessage.of("order-events", "8", "{}"), 0, null,
                        orderMessage)).toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
        try (KafkaInboxConsumer consumer = InboxSnippets.consumer(db, inbox, kafka.bootstrapServers())) {
            Await.untilOrFail(() -> consumer.applied() + consumer.duplicates() == 2, Duration.ofSeconds(60),
                    () -> consumer.applied() + " applied, " + consumer.duplicates() + " duplicates");
            assertThat(consumer.applied()).isEqualTo(1);
        }
        assertThat(count(db)).isEqualTo(2);
    }

    private static long count(DataSource db) throws Exception {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM invoices")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void execute(DataSource db, String sql) throws Exception {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
