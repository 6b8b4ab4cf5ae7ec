package dev.outbox.broker.kafka;

import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.postgres.PostgresInbox;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shared pieces of the inbox consumer's tests: the effects table (one row per applied message, no unique key, so that
 * an effect applied twice shows as two rows), its handler, and sending records the way the outbox does.
 */
final class InboxTestSupport {
    private static final AtomicLong ROW_IDS = new AtomicLong();

    private InboxTestSupport() {
    }

    static void createEffects(DataSource db, String effects) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + effects + " (message_id uuid NOT NULL, value text NOT NULL)");
        }
    }

    /** The effect of a record: a row with its message id and value. */
    static KafkaInboxConsumer.RecordHandler effectHandler(String effects) {
        return (connection, record, messageId) -> {
            try (PreparedStatement s = connection.prepareStatement("INSERT INTO " + effects
                    + " (message_id, value) VALUES (?, ?)")) {
                s.setObject(1, messageId);
                s.setString(2, new String(record.value(), StandardCharsets.UTF_8));
                s.executeUpdate();
            }
        };
    }

    /** value → number of effect rows. */
    static Map<String, Integer> effectCounts(DataSource db, String effects) throws SQLException {
        Map<String, Integer> counts = new HashMap<>();
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT value, count(*) FROM " + effects + " GROUP BY value")) {
            while (rs.next()) {
                counts.put(rs.getString(1), rs.getInt(2));
            }
        }
        return counts;
    }

    /** Sends records with message ids through the outbox's broker; returns the ids. */
    static List<UUID> sendWithIds(String bootstrap, String topic, List<String> values) throws Exception {
        List<UUID> ids = values.stream().map(v -> MessageIds.next()).toList();
        sendWithIds(bootstrap, topic, values, ids);
        return ids;
    }

    static void sendWithIds(String bootstrap, String topic, List<String> values, List<UUID> ids) throws Exception {
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(bootstrap).build()) {
            for (int i = 0; i < values.size(); i++) {
                OutboxRecord r = new OutboxRecord(ROW_IDS.incrementAndGet(), Instant.now(),
                        OutboxMessage.of(topic, "key-" + (i % 5), values.get(i)), 0, null, ids.get(i));
                broker.send(r).toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Sends records without a message id header, as a producer other than the outbox might. */
    static void sendWithoutIds(String bootstrap, String topic, List<String> values) throws Exception {
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap), new StringSerializer(),
                new ByteArraySerializer())) {
            for (String v : values) {
                producer.send(new ProducerRecord<>(topic, "plain", v.getBytes(StandardCharsets.UTF_8)))
                        .get(10, TimeUnit.SECONDS);
            }
        }
    }

    static PostgresInbox inbox(DataSource db, String table) {
        PostgresInbox inbox = PostgresInbox.builder(db).table(table).build();
        inbox.createSchema();
        return inbox;
    }
}
