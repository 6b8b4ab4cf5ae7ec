package dev.outbox.broker.kafka;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Consumes Kafka topics into a database through an {@link Inbox}, so that each message's effect is applied exactly
 * once although Kafka (and the outbox before it) deliver at least once.
 *
 * <pre>{@code
 * KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
 *         .bootstrapServers("kafka:9092")
 *         .groupId("billing")                      // also the inbox's consumer name, unless consumerName(...) is set
 *         .topics("orders")
 *         .dataSource(dataSource)                  // the database of the inbox and of the effects
 *         .inbox(inbox)                            // PostgresInbox or MySqlInbox
 *         .handler((connection, record, messageId) -> applyEffect(connection, record))
 *         .build();
 * consumer.start();
 * }</pre>
 *
 * <h2>What happens to a record</h2>
 * One thread polls and, for each record in partition order: opens a transaction, runs the record through
 * {@link Inbox#process} (which records its message id and runs the handler if the id is new), commits, and once the
 * polled records are done commits their offsets. So:
 * <ul>
 *   <li><b>Message id</b>: the header {@value KafkaMessageBroker#DEFAULT_MESSAGE_ID_HEADER} (configurable), as the
 *       outbox's {@code KafkaMessageBroker} writes it. A record without it gets a name-based UUID of its
 *       (topic, partition, offset): a redelivery of that same Kafka record is recognised, but the same message
 *       published twice (an outbox retry lands at a new offset) is not — only records with an id are
 *       effectively-once.</li>
 *   <li><b>A crash</b> between the database commit and the offset commit redelivers records whose effects are
 *       committed: the inbox recognises them and they are skipped.</li>
 *   <li><b>A handler that throws</b> (on a healthy connection): the transaction is rolled back and the record retried
 *       with exponential backoff ({@link Builder#initialBackoff}, {@link Builder#maxBackoff}); its partition waits
 *       meanwhile (to keep per-key order), the other partitions carry on. After {@link Builder#maxAttempts} failures
 *       the record is written to the inbox's failed-messages table with the reason, and its partition moves on: never
 *       dropped, never blocking forever.</li>
 *   <li><b>The database unreachable</b> (the inbox fails, the commit fails, or the connection is no longer valid after
 *       a handler failure): nothing counts as an attempt; the consumer drops its connection, waits with backoff
 *       (up to {@link Builder#maxBackoff}), keeps polling with every partition paused so that it stays in the group,
 *       and resumes with the same record: nothing is skipped.</li>
 *   <li><b>The connection failing during COMMIT</b>: the commit may have been applied or not. The record is retried
 *       like any database failure; if the commit had been applied the inbox finds the id recorded and the handler
 *       does not run again. Either way the record counts once as {@linkplain Listener#applied applied}, never as a
 *       duplicate.</li>
 *   <li><b>A rebalance</b>: offsets of the records that are done are committed before partitions are revoked, and
 *       nothing else: records fetched but not processed are left for the next owner. Lost partitions commit
 *       nothing.</li>
 * </ul>
 *
 * <h2>The key sequence check</h2>
 * A record that carries {@link dev.outbox.KeySequence#SEQUENCE} (the outbox's writer numbers each (topic, key)'s
 * records 1, 2, 3, …) is checked against the last number this consumer accepted for its partition and key: the next
 * number is in order; the first record of a key this consumer has no memory of (since its start, the partition's
 * assignment, or since the key was forgotten, {@link Builder#sequenceKeysPerPartition}) is a baseline; anything else
 * is a {@link SequenceBreak} — a {@link SequenceBreak.Kind#GAP} (numbers missing), a
 * {@link SequenceBreak.Kind#REORDER} (an old number on a new message), a {@link SequenceBreak.Kind#REPLAY} (an old
 * number on a record replayed from the parked area) or a {@link SequenceBreak.Kind#SKIP} (numbers missing, all listed
 * in {@link dev.outbox.KeySequence#SKIPPED}: records the dispatcher parked). A break is reported by a WARN line
 * (topic, partition, offset, key, expected and actual numbers; never the value), {@link Listener#sequenceBreak} and
 * {@link #sequenceBreaks}; with {@link OnSequenceBreak#HOLD} a gap or a reorder also holds its partition
 * ({@link Builder#onSequenceBreak}). The check runs only on records whose message id is new to the inbox, so a
 * redelivery is never reported, and a number is remembered only once its record's transaction committed. A record
 * that arrives after a later one shows twice: a gap when the later one comes, a reorder when it does. What it cannot
 * see: records without the header; a break across a restart or a rebalance (the first record per key is a
 * baseline); a record published twice at the same number is a duplicate only if it carries the same message id.
 *
 * <h2>Enforced consumer settings</h2>
 * {@code enable.auto.commit=false} (offsets are committed after the database commit, never before);
 * {@code group.id} must be set; {@code key.deserializer} and {@code value.deserializer} must not be set (keys are
 * UTF-8 strings, values bytes). {@code auto.offset.reset} defaults to {@code earliest}, so that a new group starts
 * from the beginning rather than skip what is already in the topic. Everything else (TLS, SASL) passes through.
 *
 * <p>Thread-safe: {@link #start()} and {@link #close()} may be called from any thread; the handler runs on the
 * consumer's thread, {@code outbox-inbox-<consumer>}, one record at a time.
 */
public final class KafkaInboxConsumer implements AutoCloseable {
    /** Default {@link Builder#maxAttempts}. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** Default {@link Builder#initialBackoff}. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(100);
    /** Default {@link Builder#maxBackoff}. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);
    /** Default {@link Builder#purgeInterval}. */
    public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofHours(1);
    /** Default {@link Builder#sequenceHoldTimeout}. */
    public static final Duration DEFAULT_SEQUENCE_HOLD_TIMEOUT = Duration.ofMinutes(5);
    /** Default {@link Builder#sequenceKeysPerPartition}. */
    public static final int DEFAULT_SEQUENCE_KEYS_PER_PARTITION = 10_000;
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    /** The effect of one record, on the inbox's transaction. */
    @FunctionalInterface
    public interface RecordHandler {
        /**
         * Applies {@code record}'s effect on {@code connection}, in the transaction that records {@code messageId};
         * must not commit, roll back or close it. Throwing rolls both back; the record is retried.
         *
         * @param connection the transaction's connection (auto-commit off), from the consumer's data source; valid
         *                   only during this call
         * @param record     the Kafka record: its key as a UTF-8 string ({@code null} if it has none), its value as
         *                   the bytes published ({@code null} for a tombstone), and its headers
         * @param messageId  the id the inbox records the record under: the message id header's, or
         *                   {@link #fallbackId} of its position when it has none; never {@code null}
         * @throws Exception any failure of the effect: the transaction is rolled back and the record retried after a
         *                   backoff, and after {@link Builder#maxAttempts} failures recorded as failed. If the
         *                   connection is no longer valid afterwards, the failure is the database's and counts no
         *                   attempt.
         */
        void handle(Connection connection, ConsumerRecord<String, byte[]> record, UUID messageId) throws Exception;
    }

    /** What happened to records, for metrics and tests; called on the consumer's thread, must not block long. */
    public interface Listener {
        /**
         * The record's effect committed. Called once per record even when the connection failed during the COMMIT
         * that applied it: the retry finds the id recorded and reports it here, not as a duplicate.
         *
         * @param record    the record whose effect committed
         * @param messageId the id the inbox recorded it under
         */
        default void applied(ConsumerRecord<String, byte[]> record, UUID messageId) {
        }

        /**
         * The record's id was processed before, by an earlier delivery of the message: skipped, its handler not run.
         *
         * @param record    the record skipped (a redelivery, or the same message published again)
         * @param messageId the id the inbox had already recorded
         */
        default void duplicate(ConsumerRecord<String, byte[]> record, UUID messageId) {
        }

        /**
         * The handler failed; the record is retried after a backoff (or recorded as failed after the last).
         *
         * @param record    the record whose handler failed; its partition waits for it
         * @param messageId the record's message id
         * @param attempt   the number of the attempt that failed, from 1 to {@link Builder#maxAttempts}
         * @param error     what the handler threw
         */
        default void handlerFailed(ConsumerRecord<String, byte[]> record, UUID messageId, int attempt, Throwable error) {
        }

        /**
         * The record was written to the failed-messages table; its partition moves on.
         *
         * @param failed the row written: the record, its id, the attempts and the reason (the last error)
         */
        default void failed(FailedMessage failed) {
        }

        /**
         * The database failed; the consumer waits and retries. No attempt of the record is counted.
         *
         * @param error the failure: of the data source, the inbox, the commit, or a connection found invalid after a
         *              handler failure
         */
        default void databaseUnavailable(Throwable error) {
        }

        /**
         * Offsets were committed.
         *
         * @param offsets per partition, the next offset to read (one past the last record done), as committed
         */
        default void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
        }

        /**
         * A record broke its key's sequence (see the class documentation). Called once per break: when the record's
         * transaction committed, or, for a record held ({@link OnSequenceBreak#HOLD}), when the hold begins.
         *
         * @param breakage what broke: its kind, the record's position and key, the numbers expected and carried
         */
        default void sequenceBreak(SequenceBreak breakage) {
        }
    }

    private final KafkaConsumer<String, byte[]> consumer;
    private final String consumerName;
    private final InboxConsumerSettings settings;
    private final InboxCounts counts = new InboxCounts();
    private final InboxLoop loop;
    private final Thread thread;
    private volatile boolean started;

    private KafkaInboxConsumer(InboxConsumerSettings settings) {
        this.settings = settings;
        this.consumerName = settings.consumerName();
        try {
            this.consumer = new KafkaConsumer<>(settings.kafka(), new StringDeserializer(),
                    new ByteArrayDeserializer());
        } catch (KafkaException e) {
            throw new IllegalArgumentException("Kafka rejected the consumer configuration: " + e.getMessage(), e);
        }
        this.loop = new InboxLoop(consumer, settings, counts);
        this.thread = new Thread(loop, "outbox-inbox-" + consumerName);
    }

    /**
     * Starts a builder; not thread-safe.
     *
     * @return a new builder with the defaults (the {@code DEFAULT_*} constants) and no Kafka property set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Subscribes and starts the consumer thread. Returns at once: the group join and the first poll happen on that
     * thread.
     *
     * @throws IllegalStateException if the consumer was started before (it cannot be restarted, even after a close)
     */
    public synchronized void start() {
        if (started) {
            throw new IllegalStateException("already started");
        }
        started = true;
        loop.arm();
        thread.start();
        log.info("Inbox consumer {} started on {}", consumerName, settings.topics());
    }

    /**
     * The inbox consumer name its entries are recorded under.
     *
     * @return the name set with {@link Builder#consumerName}, or else the group id
     */
    public String consumerName() {
        return consumerName;
    }

    /**
     * Records whose effect was committed, each counted once: a record whose COMMIT failed on the connection but had
     * been applied is counted when its retry finds the id recorded (not as a duplicate). Exact as long as no other
     * consumer with the same name works on the same message id at the same time.
     *
     * @return the count since the consumer was built, never negative
     */
    public long applied() {
        return counts.applied.get();
    }

    /**
     * Records skipped because their id was processed before.
     *
     * @return the count since the consumer was built, never negative
     */
    public long duplicates() {
        return counts.duplicates.get();
    }

    /**
     * Records moved to the failed-messages table.
     *
     * @return the count since the consumer was built, never negative
     */
    public long failed() {
        return counts.failed.get();
    }

    /**
     * Sequence breaks reported, of one kind.
     *
     * @param kind the kind; not {@code null}
     * @return the count since the consumer was built, never negative
     */
    public long sequenceBreaks(SequenceBreak.Kind kind) {
        return counts.sequenceBreaks(kind);
    }

    /**
     * The breaks whose partitions are held now ({@link OnSequenceBreak#HOLD}); thread-safe.
     *
     * @return one break per held partition, a snapshot; empty if none is held
     */
    public List<SequenceBreak> held() {
        return loop.sequence().held();
    }

    /**
     * Lets a partition held on a sequence break go on: its held record is handled (within about 100 ms) and the
     * partition carries on, until the next break. Thread-safe.
     *
     * @param topic     the held record's topic
     * @param partition the held record's partition
     * @return whether the partition was held; {@code false} if not (nothing happens)
     */
    public boolean release(String topic, int partition) {
        return loop.sequence().release(new TopicPartition(topic, partition));
    }

    /**
     * The error that ended the consumer thread.
     *
     * @return the error, or {@code null} before the start, while the thread runs and after a clean close
     */
    public Throwable failure() {
        return loop.failure();
    }

    /**
     * Stops polling, commits the offsets of the records that are done, leaves the group and closes the consumer; waits
     * for the consumer thread up to {@code timeout}. Idempotent; a consumer never started only closes its Kafka
     * client.
     *
     * @param timeout how long to wait for the consumer thread (millisecond precision); not {@code null} once
     *                started. The thread goes on stopping after it has passed.
     * @return whether the thread ended within the timeout ({@code false} too if the calling thread was interrupted,
     *         whose interrupt status is then set)
     */
    public boolean close(Duration timeout) {
        loop.stop();
        if (!started) {
            consumer.close(Duration.ZERO);
            return true;
        }
        consumer.wakeup();
        try {
            return loop.awaitStopped(timeout.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** {@link #close(Duration)} with 30 seconds. */
    @Override
    public void close() {
        if (!close(Duration.ofSeconds(30))) {
            log.warn("Inbox consumer {} did not stop within 30 s", consumerName);
        }
    }

    /**
     * The id of a record without a message id header: a name-based UUID of where it is in Kafka.
     *
     * @param topic     the record's topic; not {@code null}
     * @param partition the record's partition
     * @param offset    the record's offset in its partition
     * @return a version 3 UUID of the three, the same for the same three on every run and machine
     */
    public static UUID fallbackId(String topic, int partition, long offset) {
        return UUID.nameUUIDFromBytes(("kafka:" + topic + ":" + partition + ":" + offset)
                .getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Configures a {@link KafkaInboxConsumer}. Not thread-safe; {@link #build()} validates the whole and creates the
     * Kafka consumer (it connects on {@link KafkaInboxConsumer#start()}).
     */
    public static final class Builder extends InboxConsumerBuilder<Builder> {
        private Builder() {
        }

        /**
         * Validates and creates the consumer.
         *
         * @throws IllegalArgumentException naming a missing part, a bad relation or a Kafka setting that breaks a
         *                                  guarantee
         * @return a new consumer, not started ({@link #start()}); its Kafka client is created now, so
         *         {@link #close()} it if it is never started
         */
        public KafkaInboxConsumer build() {
            return new KafkaInboxConsumer(settings());
        }
    }
}
