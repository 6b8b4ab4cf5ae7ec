package dev.outbox.broker.rabbitmq;

import dev.outbox.FailedMessage;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.rabbit;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RabbitMqInboxConsumer} on a real node and a real Postgres inbox: repeats of a message id are applied once,
 * a handler that keeps failing moves its message to the failed table (acknowledged, not redelivered in a loop) while
 * the rest flow, and connections killed while consuming lose and double nothing.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RabbitMqInboxConsumerTest {
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final AtomicLong ROW_IDS = new AtomicLong();
    private static DataSource db;

    @BeforeAll
    static void servers() {
        JdbcServer pg = TestServers.postgres();
        db = pg.dataSource(pg.createDatabase("rabbit_inbox"));
    }

    private static String name(String prefix) {
        return prefix + "_" + NAMES.incrementAndGet() + "_" + Long.toHexString(System.nanoTime() & 0xffffff);
    }

    private static PostgresInbox inbox() {
        PostgresInbox inbox = PostgresInbox.builder(db).table(name("inbox")).build();
        inbox.createSchema();
        return inbox;
    }

    private static String effects() throws SQLException {
        String table = name("effects");
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + table + " (message_id uuid NOT NULL, value text NOT NULL)");
        }
        return table;
    }

    private static RabbitMqInboxConsumer.MessageHandler effectHandler(String effects, String failOn) {
        return (connection, delivery, messageId) -> {
            String value = new String(RabbitMqHeaders.value(delivery.getProperties(), delivery.getBody()),
                    StandardCharsets.UTF_8);
            if (value.equals(failOn)) {
                throw new IllegalStateException("cannot apply " + value);
            }
            try (PreparedStatement s = connection.prepareStatement("INSERT INTO " + effects
                    + " (message_id, value) VALUES (?, ?)")) {
                s.setObject(1, messageId);
                s.setString(2, value);
                s.executeUpdate();
            }
        };
    }

    private static Map<String, Integer> effectCounts(String effects) throws SQLException {
        Map<String, Integer> counts = new HashMap<>();
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT value, count(*) FROM " + effects + " GROUP BY value")) {
            while (rs.next()) {
                counts.put(rs.getString(1), rs.getInt(2));
            }
        }
        return counts;
    }

    /** Publishes through the outbox's broker, each value with its id. */
    private static void publish(String topic, List<String> values, List<UUID> ids) {
        try (RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder().uri(rabbit().uri()).build()) {
            assertThat(broker.send(new OutboxRecord(ROW_IDS.incrementAndGet(), Instant.now(),
                    OutboxMessage.of(topic, "key-0", values.get(0)), 0, null, ids.get(0))).toCompletableFuture()
                    .join()).isNull(); // the exchange is known from here on: the rest keep their order
            List<java.util.concurrent.CompletableFuture<Void>> sent = new ArrayList<>();
            for (int i = 1; i < values.size(); i++) {
                OutboxRecord r = new OutboxRecord(ROW_IDS.incrementAndGet(), Instant.now(),
                        OutboxMessage.of(topic, "key-" + (i % 5), values.get(i)), 0, null, ids.get(i));
                sent.add(broker.send(r).toCompletableFuture());
            }
            sent.forEach(f -> assertThat(f.join()).isNull());
        }
    }

    private static List<String> values(String prefix, int n) {
        List<String> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            values.add(prefix + i);
        }
        return values;
    }

    private static RabbitMqInboxConsumer.Builder consumer(String topic, PostgresInbox inbox,
                                                          RabbitMqInboxConsumer.MessageHandler handler) {
        return RabbitMqInboxConsumer.builder().uri(rabbit().uri().toString()).queues(List.of(topic))
                .consumerName("billing").dataSource(db).inbox(inbox).handler(handler);
    }

    private static int queued(String queue) {
        return RabbitMqTestSupport.withChannel(ch -> (int) ch.messageCount(queue));
    }

    @Test
    void repeatsOfAMessageIdAreAppliedOnce() throws Exception {
        String topic = RabbitMqTestSupport.newTopic("inbox-dups");
        String effects = effects();
        List<String> values = values("v", 20);
        List<UUID> ids = values.stream().map(v -> MessageIds.next()).toList();
        publish(topic, values, ids);
        publish(topic, values.subList(0, 5), ids.subList(0, 5)); // a crashed leader's in-flight records again

        try (RabbitMqInboxConsumer c = consumer(topic, inbox(), effectHandler(effects, null)).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() + c.duplicates() == 25, Duration.ofSeconds(30),
                    () -> c.applied() + " applied, " + c.duplicates() + " duplicates");
            assertThat(c.applied()).isEqualTo(20);
            assertThat(c.duplicates()).isEqualTo(5);
        }
        assertThat(effectCounts(effects)).hasSize(20).allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1));
        assertThat(queued(topic)).as("every message acknowledged").isZero();
    }

    @Test
    void aMessageWhoseHandlerKeepsFailingIsRecordedAndAcknowledgedWhileTheRestFlow() throws Exception {
        String topic = RabbitMqTestSupport.newTopic("inbox-failing");
        String effects = effects();
        PostgresInbox inbox = inbox();
        List<String> values = values("m", 10);
        List<UUID> ids = values.stream().map(v -> MessageIds.next()).toList();
        publish(topic, values, ids);

        try (RabbitMqInboxConsumer c = consumer(topic, inbox, effectHandler(effects, "m3")).maxAttempts(2).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() == 9 && c.failed() == 1, Duration.ofSeconds(30),
                    () -> c.applied() + " applied, " + c.failed() + " failed");
            assertThat(queued(topic)).as("the failed message is not redelivered").isZero();
            assertThat(c.duplicates()).isZero();
        }
        List<FailedMessage> failed = inbox.failed("billing", 10);
        assertThat(failed).singleElement().satisfies(f -> {
            assertThat(f.messageId()).isEqualTo(ids.get(3));
            assertThat(f.topic()).isEqualTo(topic);
            assertThat(f.key()).isEqualTo("key-3");
            assertThat(f.attempts()).isEqualTo(2);
            assertThat(f.reason()).contains("cannot apply m3");
        });
        assertThat(effectCounts(effects)).hasSize(9).doesNotContainKey("m3");
    }

    @Test
    void connectionsKilledWhileConsumingLoseAndDoubleNothing() throws Exception {
        String topic = RabbitMqTestSupport.newTopic("inbox-killed");
        String effects = effects();
        List<String> values = values("k", 300);
        publish(topic, values, values.stream().map(v -> MessageIds.next()).toList());

        try (RabbitMqInboxConsumer c = consumer(topic, inbox(), effectHandler(effects, null)).prefetch(20).build()) {
            c.start();
            Await.untilOrFail(() -> c.applied() >= 50, Duration.ofSeconds(30), () -> c.applied() + " applied");
            rabbit().closeAllConnections();
            Await.untilOrFail(() -> c.applied() == 300, Duration.ofSeconds(60),
                    () -> c.applied() + " applied, " + c.duplicates() + " duplicates");
            Await.untilOrFail(() -> queued(topic) == 0, Duration.ofSeconds(30), () -> "queue drained");
            assertThat(c.duplicates()).as("redelivered, recognised").isLessThanOrEqualTo(20 + 1);
        }
        assertThat(effectCounts(effects)).hasSize(300).allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1));
    }
}
