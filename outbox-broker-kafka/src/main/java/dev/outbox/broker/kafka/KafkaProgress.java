package dev.outbox.broker.kafka;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Exactly-once publishing's record of progress in Kafka: with each transaction, a {@link KafkaTransactions} writes
 * one record to the progress topic, keyed by its transactional id, listing the outbox records (row id and message
 * id) it has published whose rows the table may still hold — those of this transaction and of earlier ones whose
 * purge it has not heard of. It is part of the transaction, so it is visible to a {@code read_committed} reader
 * exactly when those records are. A new producer of the id, after its {@code initTransactions()} has fenced the
 * previous one and settled its open transaction, reads the key's last record ({@link #read}) and acknowledges the
 * records listed there without sending them again.
 *
 * <p>The topic is compacted (only the last record of each key matters) and has one partition; it is created on first
 * use if it does not exist. A record's value: one version byte (1), a count, then per record its row id and its
 * message id's two halves, 24 bytes each. Thread-safe.
 */
final class KafkaProgress {
    /** The default progress topic, shared by every outbox of a cluster (each writes under its own key). */
    static final String DEFAULT_TOPIC = "outbox-progress";
    private static final byte VERSION = 1;
    private static final int ENTRY_BYTES = 24;
    private static final Logger log = LoggerFactory.getLogger(KafkaProgress.class);

    private final String topic;
    private final Map<String, Object> clientConfig;
    private final Supplier<Admin> admin;
    private final Duration timeout;
    private volatile boolean topicReady;

    /**
     * @param topic        the progress topic
     * @param clientConfig the connection settings (bootstrap servers, security) a consumer reads the topic with
     * @param admin        the broker's admin client, to create the topic
     * @param timeout      the longest a read may take
     */
    KafkaProgress(String topic, Map<String, Object> clientConfig, Supplier<Admin> admin, Duration timeout) {
        this.topic = topic;
        this.clientConfig = clientConfig;
        this.admin = admin;
        this.timeout = timeout;
    }

    String topic() {
        return topic;
    }

    /** The progress record of {@code transactionalId}: every entry of {@code published}, row id by message id. */
    ProducerRecord<String, byte[]> record(String transactionalId, Map<UUID, Long> published) {
        ByteBuffer value = ByteBuffer.allocate(5 + published.size() * ENTRY_BYTES);
        value.put(VERSION).putInt(published.size());
        published.forEach((messageId, id) -> value.putLong(id).putLong(messageId.getMostSignificantBits())
                .putLong(messageId.getLeastSignificantBits()));
        return new ProducerRecord<>(topic, 0, transactionalId, value.array());
    }

    /**
     * The records listed in the last committed progress record of {@code transactionalId}: row id by message id;
     * empty if it has none. Call it only after {@code initTransactions()}: before, a transaction of the previous
     * producer may still commit.
     *
     * @throws KafkaException if the topic cannot be created or read within the timeout
     */
    Map<UUID, Long> read(String transactionalId) {
        ensureTopic();
        byte[] key = transactionalId.getBytes(StandardCharsets.UTF_8);
        Map<String, Object> config = new HashMap<>(clientConfig);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        long deadline = System.nanoTime() + timeout.toNanos();
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            long to = stableEnd(consumer, partition, transactionalId, deadline);
            for (long step = 256; to > 0; step *= 2) {
                long from = Math.max(0, to - step);
                consumer.seek(partition, from);
                byte[] last = null;
                while (consumer.position(partition, left(deadline)) < to) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(left(deadline).compareTo(Duration.ZERO) > 0
                            ? Duration.ofMillis(Math.min(100, left(deadline).toMillis() + 1)) : Duration.ZERO)) {
                        if (r.offset() < to && Arrays.equals(r.key(), key)) {
                            last = r.value();
                        }
                    }
                    if (System.nanoTime() - deadline > 0) {
                        throw new TimeoutException("reading the progress topic '" + topic + "' took longer than "
                                + timeout);
                    }
                }
                if (last != null) {
                    return decode(last);
                }
                to = from;
            }
            return Map.of();
        }
    }

    /**
     * The offset below which every record of this id's earlier producers is readable: the last stable offset, once
     * it has reached the high watermark seen now. Under {@code read_committed} a consumer reads only below the last
     * stable offset, and another producer's open transaction on the partition (another shard's, or a killed
     * process's, until the cluster aborts it after its {@code transaction.timeout.ms}) holds that offset back, with
     * this id's own last committed progress record possibly above it. Reading only to there would return an older
     * record and send again what Kafka already has; so this waits until every transaction begun before now is decided.
     *
     * <p>One exception: a transaction left open on the partition by this id's own producer id (a "hanging"
     * transaction, which the cluster's coordinator no longer counts as ongoing: seen after a broker restart in the
     * middle of a transaction) ends only when this producer id commits there again, so waiting for it would never
     * end. Every committed transaction of this producer id lies below it (a producer has one transaction at a time),
     * so the read may stop at its start.
     *
     * @throws TimeoutException if that takes longer than the timeout (the caller fails its sends and tries again)
     */
    private long stableEnd(KafkaConsumer<byte[], byte[]> consumer, TopicPartition partition, String transactionalId,
                           long deadline) {
        long highWatermark = highWatermark(partition, deadline);
        Long end = consumer.endOffsets(List.of(partition), left(deadline)).get(partition);
        if (end == null) { // out of time: a zero timeout returns no offset instead of throwing
            throw new TimeoutException("reading the progress topic '" + topic + "' took longer than " + timeout
                    + ": its last stable offset could not be read");
        }
        long stable = end;
        if (stable < highWatermark) {
            log.info("Reading the progress topic '{}' waits for an open transaction: last stable offset {}, high"
                    + " watermark {}", topic, stable, highWatermark);
        }
        while (stable < highWatermark) {
            if (ownOpenTransactionAt(partition, transactionalId, stable, deadline)) {
                log.warn("The progress topic '{}' has a transaction of transactional id '{}' itself open at offset {}"
                        + " (below its high watermark {}), which the coordinator no longer counts as ongoing; reading"
                        + " below it: every committed progress record of the id is there", topic, transactionalId,
                        stable, highWatermark);
                return stable;
            }
            consumer.seek(partition, stable);
            consumer.poll(Duration.ofMillis(Math.max(1, Math.min(100, left(deadline).toMillis())))); // waits for it
            try {
                Long next = consumer.endOffsets(List.of(partition), left(deadline)).get(partition);
                if (next != null) { // null: out of time (a zero timeout returns no offset), said below
                    stable = Math.max(stable, next);
                }
            } catch (TimeoutException e) {
                // out of time: said below
            }
            if (stable < highWatermark && System.nanoTime() - deadline > 0) {
                throw new TimeoutException("reading the progress topic '" + topic + "' took longer than " + timeout
                        + ": an open transaction holds its last stable offset at " + stable + ", below its high"
                        + " watermark " + highWatermark + " (a killed producer's transaction ends when the cluster"
                        + " aborts it, after its transaction.timeout.ms)");
            }
        }
        return stable;
    }

    /**
     * Whether the transaction open on the partition at {@code offset} is one of {@code transactionalId}'s own producer
     * id; false if that cannot be told within the deadline.
     */
    private boolean ownOpenTransactionAt(TopicPartition partition, String transactionalId, long offset, long deadline) {
        try {
            long wait = Math.max(1, left(deadline).toMillis());
            long producerId = admin.get().describeTransactions(List.of(transactionalId)).description(transactionalId)
                    .get(wait, TimeUnit.MILLISECONDS).producerId();
            for (ProducerState p : admin.get().describeProducers(List.of(partition)).partitionResult(partition)
                    .get(Math.max(1, left(deadline).toMillis()), TimeUnit.MILLISECONDS).activeProducers()) {
                if (p.producerId() == producerId && p.currentTransactionStartOffset().orElse(-1) == offset) {
                    return true;
                }
            }
            return false;
        } catch (ExecutionException | java.util.concurrent.TimeoutException | RuntimeException e) {
            log.debug("could not tell whose transaction holds the progress topic '{}' at {}", topic, offset, e);
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted while reading the progress topic '" + topic + "'", e);
        }
    }

    /** The partition's high watermark: the end of everything written, committed or not. */
    private long highWatermark(TopicPartition partition, long deadline) {
        try {
            return admin.get().listOffsets(Map.of(partition, OffsetSpec.latest()),
                    new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).partitionResult(partition)
                    .get(Math.max(1, left(deadline).toMillis()), TimeUnit.MILLISECONDS).offset();
        } catch (ExecutionException e) {
            throw new KafkaException("reading the end of the progress topic '" + topic + "' failed: " + e.getCause(),
                    e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TimeoutException("reading the end of the progress topic '" + topic + "' took longer than "
                    + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted while reading the end of the progress topic '" + topic + "'", e);
        }
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
    }

    static Map<UUID, Long> decode(byte[] value) {
        ByteBuffer in = ByteBuffer.wrap(value);
        if (value.length < 5 || in.get() != VERSION) {
            throw new KafkaException("a progress record of an unknown format (" + value.length + " bytes)");
        }
        int count = in.getInt();
        if (count < 0 || in.remaining() != count * ENTRY_BYTES) {
            throw new KafkaException("a progress record of " + value.length + " bytes cannot hold " + count
                    + " entries");
        }
        Map<UUID, Long> published = new HashMap<>(count * 2);
        for (int i = 0; i < count; i++) {
            long id = in.getLong();
            published.put(new UUID(in.getLong(), in.getLong()), id);
        }
        return published;
    }

    /** Creates the topic, compacted and with one partition, unless it exists. */
    private void ensureTopic() {
        if (topicReady) {
            return;
        }
        NewTopic t = new NewTopic(topic, 1, (short) -1).configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG,
                TopicConfig.CLEANUP_POLICY_COMPACT));
        try {
            admin.get().createTopics(List.of(t)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new KafkaException("creating the progress topic '" + topic + "' failed: " + e.getCause(),
                        e.getCause());
            }
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TimeoutException("creating the progress topic '" + topic + "' took longer than " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted while creating the progress topic '" + topic + "'", e);
        }
        topicReady = true;
    }
}
