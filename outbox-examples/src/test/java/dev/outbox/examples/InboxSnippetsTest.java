package dev.outbox.examples;

import dev.outbox.KeySequence;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.SequenceBreak;
import dev.outbox.OutboxRecord;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
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

    @Test
    void theHoldingConsumerHoldsAGapUntilReleased() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        DataSource db = postgres.dataSource(postgres.createDatabase("readme_inbox_sequence"));
        PostgresInbox inbox = InboxSnippets.createInbox(db);
        kafka.createTopic("order-events", 3);
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()), new StringSerializer(),
                new ByteArraySerializer())) {
            for (long seq : new long[] {1, 2, 4}) {   // 3 is missing
                ProducerRecord<String, byte[]> r = new ProducerRecord<>("order-events", 0, "sequence-42",
                        "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                r.headers().add(KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER, MessageIds.toHeader(MessageIds.next()));
                r.headers().add(KeySequence.SEQUENCE, KeySequence.encode(seq));
                producer.send(r).get(10, TimeUnit.SECONDS);
            }
        }
        List<SequenceBreak> alerts = Collections.synchronizedList(new ArrayList<>());
        try (KafkaInboxConsumer consumer = InboxSnippets.holdingConsumer(db, inbox, kafka.bootstrapServers(),
                alerts)) {
            Await.untilOrFail(() -> !consumer.held().isEmpty(), Duration.ofSeconds(60), () -> "nothing held");
            assertThat(alerts).singleElement().satisfies(b -> {
                assertThat(b.kind()).isEqualTo(SequenceBreak.Kind.GAP);
                assertThat(b.key()).isEqualTo("sequence-42");
                assertThat(b.missing()).containsExactly(3L);
            });
            InboxSnippets.releaseAll(consumer);
            Await.untilOrFail(() -> consumer.held().isEmpty() && consumer.applied() >= 3, Duration.ofSeconds(60),
                    () -> consumer.applied() + " applied, held " + consumer.held());
            assertThat(alerts).as("reported once").hasSize(1);
        }
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
