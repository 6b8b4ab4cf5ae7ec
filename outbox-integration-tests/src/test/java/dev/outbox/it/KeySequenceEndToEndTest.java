package dev.outbox.it;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.SequenceBreak;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

/**
 * The per-key sequence end to end, every part real: writers number their messages (Postgres store,
 * {@code keySequence(true)}), a row is deleted by hand before the dispatcher starts (a planted gap), a record too
 * large for the topic is parked and its key moves on (the dispatcher's {@code outbox-key-skipped}), and, once the
 * topic takes it, the operator replays it ({@code outbox-replayed}); a {@link KafkaInboxConsumer} reports exactly the
 * gap, the skip and the replay — and nothing for the keys written cleanly.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KeySequenceEndToEndTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int LIMIT = 20_000;

    @Test
    void theConsumerReportsThePlantedGapTheParkAndTheReplayAndNothingElse() throws Exception {
        KafkaServer kafka = TestServers.kafka();
        JdbcServer pg = TestServers.postgres();
        DataSource db = pg.dataSource(pg.createDatabase("key_sequence_e2e"));
        String topic = "key-sequence-e2e-" + Long.toHexString(System.nanoTime());
        kafka.createTopic(topic, 3);
        maxMessageBytes(kafka, topic, LIMIT);

        PostgresStore store = PostgresStore.builder(db).table("seq_outbox").keySequence(true).build();
        store.createSchema();
        List<Long> ids = new ArrayList<>();
        for (int round = 1; round <= 4; round++) {
            for (String key : List.of("clean-a", "clean-b", "gap", "park")) {
                byte[] value = (key + "-" + round).getBytes();
                if (key.equals("park") && round == 2) {
                    value = new byte[2 * LIMIT]; // the topic refuses it for good: parked, and the key moves on
                }
                try (Connection c = db.getConnection()) {
                    c.setAutoCommit(false);
                    store.publisher().publish(c, OutboxMessage.of(topic, key, value));
                    c.commit();
                }
            }
        }
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(
                "DELETE FROM seq_outbox WHERE key = 'gap' AND value = ?")) {
            s.setBytes(1, "gap-3".getBytes());
            assertThat(s.executeUpdate()).as("the planted gap: number 3 of key 'gap'").isEqualTo(1);
        }

        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE seq_effects (message_id uuid NOT NULL, value bytea)");
        }
        PostgresInbox inbox = PostgresInbox.builder(db).build();
        inbox.createSchema();
        List<SequenceBreak> breaks = Collections.synchronizedList(new ArrayList<>());
        try (KafkaInboxConsumer consumer = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                .groupId("seq-e2e").topics(topic).dataSource(db).inbox(inbox)
                .handler((connection, record, messageId) -> {
                    try (PreparedStatement s = connection.prepareStatement(
                            "INSERT INTO seq_effects (message_id, value) VALUES (?, ?)")) {
                        s.setObject(1, messageId);
                        s.setBytes(2, record.value());
                        s.executeUpdate();
                    }
                })
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void sequenceBreak(SequenceBreak b) {
                        breaks.add(b);
                    }
                }).build();
             Dispatcher dispatcher = Dispatcher.builder(store, KafkaMessageBroker.builder()
                             .bootstrapServers(kafka.bootstrapServers()).build())
                     .config(DispatcherConfig.builder().pollInterval(Duration.ofMillis(50)).build())
                     .name("seq-e2e").build()) {
            consumer.start();
            dispatcher.start();
            // 16 written, 1 deleted by hand, 1 parked.
            Await.untilOrFail(() -> consumer.applied() == 14 && store.parked(ParkedQuery.first(10)).size() == 1,
                    WAIT, () -> "applied " + consumer.applied() + ", breaks " + breaks);
            assertThat(breaks).extracting(SequenceBreak::key, SequenceBreak::kind, SequenceBreak::missing)
                    .containsExactlyInAnyOrder(
                            tuple("gap", SequenceBreak.Kind.GAP, List.of(3L)),
                            tuple("park", SequenceBreak.Kind.SKIP, List.of(2L)));

            maxMessageBytes(kafka, topic, 4 * LIMIT); // the operator fixes the cause
            List<ParkedRecord> parked = store.parked(ParkedQuery.first(10));
            assertThat(store.replay(parked.stream().map(ParkedRecord::id).toList())).isEqualTo(1);
            Await.untilOrFail(() -> consumer.applied() == 15, WAIT,
                    () -> "applied " + consumer.applied() + ", breaks " + breaks);
            assertThat(breaks).extracting(SequenceBreak::key, SequenceBreak::kind)
                    .containsExactlyInAnyOrder(tuple("gap", SequenceBreak.Kind.GAP),
                            tuple("park", SequenceBreak.Kind.SKIP), tuple("park", SequenceBreak.Kind.REPLAY));
        }
    }

    private static void maxMessageBytes(KafkaServer kafka, String topic, int bytes) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("max.message.bytes", Integer.toString(bytes)), AlterConfigOp.OpType.SET))))
                    .all().get(30, TimeUnit.SECONDS);
            Await.untilOrFail(() -> {
                try {
                    ConfigEntry e = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS)
                            .get(resource).get("max.message.bytes");
                    return e != null && Integer.toString(bytes).equals(e.value());
                } catch (Exception e) {
                    return false;
                }
            }, WAIT, () -> "max.message.bytes of " + topic + " set to " + bytes);
        }
    }
}
