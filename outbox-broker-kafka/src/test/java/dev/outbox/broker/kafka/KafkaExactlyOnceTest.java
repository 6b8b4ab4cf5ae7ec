package dev.outbox.broker.kafka;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.PurgeListener;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Exactly-once publishing ({@link KafkaMessageBroker.Builder#exactlyOnce}) against the real in-process Kafka: a
 * producer of the transactional id that dies after Kafka committed its records and before the table forgot them
 * leaves them listed in its progress record, and the next producer acknowledges them without sending them again;
 * what the dispatcher reports purged leaves the list. Without the option the same sequence publishes every record
 * twice (the test that shows the check can fail).
 */
class KafkaExactlyOnceTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static KafkaServer kafka;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    @Test
    void aSuccessorAcknowledgesWithoutSendingWhatItsPredecessorPublished() throws Exception {
        String topic = newTopic();
        String progress = "progress-" + UUID.randomUUID();
        List<OutboxRecord> records = records(topic, 1, 5);
        try (KafkaMessageBroker first = broker("eos-" + topic, progress)) {
            sendAll(first, records); // committed in Kafka; the "crash" comes before any purge
        }
        List<OutboxRecord> again = new ArrayList<>(records); // the successor's harvest reads the same rows
        again.addAll(records(topic, 6, 6));
        try (KafkaMessageBroker second = broker("eos-" + topic, progress)) {
            sendAll(second, again);
            assertThat(second.recordsPublishedBefore()).isEqualTo(5);
        }
        assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 6, WAIT)))
                .containsExactlyInAnyOrder("v1", "v2", "v3", "v4", "v5", "v6");
    }

    @Test
    void withoutExactlyOnceTheSameSequencePublishesTwice() throws Exception {
        String topic = newTopic();
        List<OutboxRecord> records = records(topic, 1, 3);
        for (int i = 0; i < 2; i++) {
            try (KafkaMessageBroker b = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                    .transactionalId("plain-" + topic).build()) {
                sendAll(b, records);
                assertThat(b.capability(PurgeListener.class)).isEmpty();
            }
        }
        assertThat(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 6, WAIT)).hasSize(6);
    }

    /**
     * Found by {@code ExactlyOnceEndToEndTest} (sharded, seed 59721216257163: 2 duplicates after a Kafka restart): a
     * record acknowledged without a send, or published by this producer, whose purge then fails (refused: the
     * dispatcher's leader epoch moved on meanwhile) is read again by the next harvest and must be acknowledged without
     * a send again, not published a second time.
     */
    @Test
    void aRecordReadAgainBeforeItsPurgeIsNotSentAgain() throws Exception {
        String topic = newTopic();
        String progress = "progress-" + UUID.randomUUID();
        List<OutboxRecord> records = records(topic, 1, 3);
        try (KafkaMessageBroker first = broker("again-" + topic, progress)) {
            sendAll(first, records); // committed in Kafka; no purge reported
        }
        List<OutboxRecord> own = records(topic, 4, 5);
        try (KafkaMessageBroker second = broker("again-" + topic, progress)) {
            sendAll(second, records); // listed by the first: acknowledged without a send
            sendAll(second, own); // published by this producer
            // Their purges failed; the next harvest reads the same rows again.
            sendAll(second, records);
            sendAll(second, own);
            assertThat(second.recordsPublishedBefore()).isEqualTo(3 + 3 + 2);
            // Once purged, a row is never read again: what is reported purged is no longer remembered.
            second.capability(PurgeListener.class).orElseThrow().purged(List.of(1L, 2L, 3L, 4L, 5L));
            sendAll(second, records(topic, 6, 6));
        }
        assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 6, WAIT)))
                .containsExactlyInAnyOrder("v1", "v2", "v3", "v4", "v5", "v6");
    }

    @Test
    void purgedRecordsLeaveTheProgressAndUnpurgedOnesStay() throws Exception {
        String topic = newTopic();
        String progress = "progress-" + UUID.randomUUID();
        List<OutboxRecord> records = records(topic, 1, 4);
        try (KafkaMessageBroker first = broker("purge-" + topic, progress)) {
            sendAll(first, records.subList(0, 2));
            first.capability(PurgeListener.class).orElseThrow().purged(List.of(1L, 2L)); // the store deleted 1 and 2
            sendAll(first, records.subList(2, 4)); // its progress record now lists 3 and 4 only
        }
        try (KafkaMessageBroker second = broker("purge-" + topic, progress)) {
            // A harvest never reads a purged row again; these are sent as new records to show what is listed.
            sendAll(second, records);
            assertThat(second.recordsPublishedBefore()).as("3 and 4 were listed, 1 and 2 were not").isEqualTo(2);
        }
        assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 6, WAIT)))
                .containsExactlyInAnyOrder("v1", "v2", "v3", "v4", "v1", "v2");
    }

    @Test
    void aShardedOutboxKeepsOneProgressPerShard() throws Exception {
        String topic = newTopic();
        String progress = "progress-" + UUID.randomUUID();
        List<OutboxRecord> shard0 = records(topic, 1, 2);
        List<OutboxRecord> shard1 = records(topic, 3, 4);
        try (KafkaMessageBroker b = broker("sharded-" + topic, progress)) {
            sendAll((KafkaMessageBroker) b.forShard(0), shard0);
            sendAll((KafkaMessageBroker) b.forShard(1), shard1);
        }
        try (KafkaMessageBroker b = broker("sharded-" + topic, progress)) {
            KafkaMessageBroker s1 = (KafkaMessageBroker) b.forShard(1);
            sendAll(s1, shard1);
            sendAll(s1, shard0); // shard 0's records are not shard 1's to skip
            assertThat(s1.recordsPublishedBefore()).isEqualTo(2);
        }
        assertThat(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 6, WAIT)).hasSize(6);
    }

    /**
     * A new producer's read of the progress waits until every transaction begun before it on the shared progress
     * partition is decided. Another producer's open transaction (another shard's, or a killed process's until the
     * cluster aborts it) holds the partition's last stable offset below this id's own committed progress record, and
     * a {@code read_committed} read that stopped there returned an older record: the sharded end-to-end run then sent
     * again what Kafka already had. Now the read fails after its timeout instead, and succeeds once the transaction
     * ends.
     */
    @Test
    void theProgressReadWaitsForAnotherProducersOpenTransactionBelowItsOwnRecord() throws Exception {
        String topic = "progress-" + UUID.randomUUID();
        Map<String, Object> client = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        UUID messageId = UUID.randomUUID();
        try (Admin admin = Admin.create(client);
             Producer<String, byte[]> other = transactional(client, "other-" + topic);
             Producer<String, byte[]> mine = transactional(client, "mine-" + topic)) {
            KafkaProgress shortRead = new KafkaProgress(topic, client, () -> admin, Duration.ofSeconds(2));
            assertThat(shortRead.read("mine-" + topic)).isEmpty(); // creates the topic
            other.beginTransaction(); // left open: the last stable offset stays below what follows
            other.send(new ProducerRecord<>(topic, 0, "other-" + topic, new byte[] {1, 0, 0, 0, 0})).get();
            mine.beginTransaction();
            mine.send(shortRead.record("mine-" + topic, Map.of(messageId, 7L))).get();
            mine.commitTransaction();

            assertThatThrownBy(() -> shortRead.read("mine-" + topic)).isInstanceOf(TimeoutException.class)
                    .hasMessageContaining("open transaction");
            CompletableFuture<Map<UUID, Long>> read = CompletableFuture.supplyAsync(
                    () -> new KafkaProgress(topic, client, () -> admin, WAIT).read("mine-" + topic));
            other.abortTransaction();
            assertThat(read.get(WAIT.toSeconds(), TimeUnit.SECONDS)).containsExactlyEntriesOf(Map.of(messageId, 7L));
        }
    }

    private static Producer<String, byte[]> transactional(Map<String, Object> client, String transactionalId) {
        Map<String, Object> config = new HashMap<>(client);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        Producer<String, byte[]> p = new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
        p.initTransactions();
        return p;
    }

    @Test
    void badSettingsAreRefusedNamingThem() {
        assertThatThrownBy(() -> KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .exactlyOnce().build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("transactionalId")
                .hasMessageContaining(KafkaProgress.DEFAULT_TOPIC);
        assertThatThrownBy(() -> KafkaMessageBroker.builder().exactlyOnce("no spaces"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'no spaces'");
    }

    @Test
    void aProgressRecordRoundTrips() {
        UUID a = UUID.randomUUID();
        UUID b = UUID.randomUUID();
        KafkaProgress p = new KafkaProgress("t", Map.of(), () -> null, WAIT);
        byte[] value = p.record("id", Map.of(a, 7L, b, Long.MAX_VALUE)).value();
        assertThat(KafkaProgress.decode(value)).containsExactlyInAnyOrderEntriesOf(Map.of(a, 7L, b, Long.MAX_VALUE));
        assertThatThrownBy(() -> KafkaProgress.decode(new byte[] {9, 0, 0, 0, 0}))
                .hasMessageContaining("unknown format");
    }

    private static KafkaMessageBroker broker(String transactionalId, String progressTopic) {
        return KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers()).deliveryTimeout(
                Duration.ofSeconds(10)).transactionalId(transactionalId).exactlyOnce(progressTopic).build();
    }

    private static String newTopic() {
        String t = "eos-" + UUID.randomUUID();
        kafka.createTopic(t, 2);
        return t;
    }

    /** Each id's message id, the same whenever a test makes the record again (a row read again). */
    private static final Map<Long, UUID> MESSAGE_IDS = new ConcurrentHashMap<>();

    /** Records {@code from} to {@code to}: ids as given, values "v<id>". */
    private static List<OutboxRecord> records(String topic, long from, long to) {
        List<OutboxRecord> out = new ArrayList<>();
        for (long id = from; id <= to; id++) {
            UUID messageId = MESSAGE_IDS.computeIfAbsent(id, k -> UUID.randomUUID());
            out.add(new OutboxRecord(id, Instant.now(), OutboxMessage.of(topic, "k" + id, "v" + id), 0, null,
                    messageId));
        }
        return out;
    }

    /** Sends every record and waits for each acknowledgement; a retriable failure is sent again, three times. */
    private static void sendAll(KafkaMessageBroker broker, List<OutboxRecord> records) throws Exception {
        for (OutboxRecord r : records) {
            for (int attempt = 1; ; attempt++) {
                CompletableFuture<Void> f = broker.send(r).toCompletableFuture();
                try {
                    f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException e) {
                    if (attempt == 3) {
                        throw e;
                    }
                }
            }
        }
    }

    private static List<String> values(List<ConsumerRecord<String, byte[]>> records) {
        return records.stream().map(r -> new String(r.value(), StandardCharsets.UTF_8)).toList();
    }
}
