package dev.outbox.broker.kafka;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.MessageIds;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.StoreException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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
    /** The longest the consumer works through fetched records before it polls again. */
    private static final long WORK_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(100);
    private static final Duration COMMIT_TIMEOUT = Duration.ofSeconds(5);
    private static final int VALIDITY_CHECK_SECONDS = 5;
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
    }

    private final KafkaConsumer<String, byte[]> consumer;
    private final List<String> topics;
    private final DataSource dataSource;
    private final Inbox inbox;
    private final String consumerName;
    private final RecordHandler handler;
    private final Listener listener;
    private final String messageIdHeader;
    private final int maxAttempts;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final Backoff retries;
    private final Duration purgeInterval;
    private final Thread thread;
    private final CountDownLatch stopped = new CountDownLatch(1);

    // State of the consumer thread only.
    private final Map<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> queues = new LinkedHashMap<>();
    private final Map<TopicPartition, Integer> attempts = new HashMap<>();
    private final Map<TopicPartition, Long> retryAt = new HashMap<>();
    private final Map<TopicPartition, Throwable> lastError = new HashMap<>();
    private final Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
    /** Per partition, the offset of the record whose handler ran but whose COMMIT failed: its outcome is unknown. */
    private final Map<TopicPartition, Long> commitUnknown = new HashMap<>();
    private Connection connection;
    private long databaseRetryAt;
    private int databaseFailures;
    private long nextPurge;

    private final AtomicLong applied = new AtomicLong();
    private final AtomicLong duplicates = new AtomicLong();
    private final AtomicLong failedCount = new AtomicLong();
    private volatile boolean running;
    private volatile boolean started;
    private volatile Throwable failure;

    private KafkaInboxConsumer(Builder b, Map<String, Object> config) {
        this.topics = List.copyOf(b.topics);
        this.dataSource = b.dataSource;
        this.inbox = b.inbox;
        this.consumerName = b.consumerName != null ? b.consumerName : String.valueOf(config.get(
                ConsumerConfig.GROUP_ID_CONFIG));
        Inbox.validateConsumer(consumerName);
        this.handler = b.handler;
        this.listener = b.listener;
        this.messageIdHeader = b.messageIdHeader;
        this.maxAttempts = b.maxAttempts;
        this.initialBackoff = b.initialBackoff;
        this.maxBackoff = b.maxBackoff;
        this.retries = Backoff.exponential(b.initialBackoff, b.maxBackoff);
        this.purgeInterval = b.purgeInterval;
        try {
            this.consumer = new KafkaConsumer<>(config, new StringDeserializer(), new ByteArrayDeserializer());
        } catch (KafkaException e) {
            throw new IllegalArgumentException("Kafka rejected the consumer configuration: " + e.getMessage(), e);
        }
        this.thread = new Thread(this::run, "outbox-inbox-" + consumerName);
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
        running = true;
        thread.start();
        log.info("Inbox consumer {} started on {}", consumerName, topics);
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
        return applied.get();
    }

    /**
     * Records skipped because their id was processed before.
     *
     * @return the count since the consumer was built, never negative
     */
    public long duplicates() {
        return duplicates.get();
    }

    /**
     * Records moved to the failed-messages table.
     *
     * @return the count since the consumer was built, never negative
     */
    public long failed() {
        return failedCount.get();
    }

    /**
     * The error that ended the consumer thread.
     *
     * @return the error, or {@code null} before the start, while the thread runs and after a clean close
     */
    public Throwable failure() {
        return failure;
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
        running = false;
        if (!started) {
            consumer.close(Duration.ZERO);
            return true;
        }
        consumer.wakeup();
        try {
            return stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
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

    // ------------------------------------------------------------------------------------------ consumer thread

    private void run() {
        try {
            consumer.subscribe(topics, new Rebalance());
            nextPurge = System.nanoTime() + purgeInterval.toNanos();
            while (running) {
                ConsumerRecords<String, byte[]> records = consumer.poll(pollTimeout());
                for (TopicPartition tp : records.partitions()) {
                    queues.computeIfAbsent(tp, p -> new ArrayDeque<>()).addAll(records.records(tp));
                }
                pauseBusyPartitions();
                work();
                commit();
                purgeIfDue();
            }
        } catch (WakeupException e) {
            if (running) {
                failure = e;
            }
        } catch (Throwable e) {
            failure = e;
            log.error("Inbox consumer {} stopped on an unexpected error", consumerName, e);
        } finally {
            try {
                commit();
            } catch (RuntimeException e) {
                log.warn("Inbox consumer {}: the last offset commit failed; records done since the previous one will"
                        + " be redelivered and skipped as duplicates", consumerName, e);
            }
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log.debug("closing the Kafka consumer", e);
            }
            closeConnection();
            stopped.countDown();
            log.info("Inbox consumer {} stopped: {} applied, {} duplicates, {} failed", consumerName, applied.get(),
                    duplicates.get(), failedCount.get());
        }
    }

    /** Zero when a record can be worked on now; otherwise until the earliest retry, at most the poll timeout. */
    private Duration pollTimeout() {
        long now = System.nanoTime();
        long wait = POLL_TIMEOUT.toNanos();
        if (databaseRetryAt - now > 0) {
            return Duration.ofNanos(Math.min(wait, databaseRetryAt - now));
        }
        for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> e : queues.entrySet()) {
            if (!e.getValue().isEmpty()) {
                Long at = retryAt.get(e.getKey());
                wait = Math.min(wait, at == null ? 0 : Math.max(0, at - now));
            }
        }
        return Duration.ofNanos(wait);
    }

    /** A partition with records waiting fetches nothing more until they are done. */
    private void pauseBusyPartitions() {
        List<TopicPartition> busy = new ArrayList<>();
        for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> e : queues.entrySet()) {
            if (!e.getValue().isEmpty()) {
                busy.add(e.getKey());
            }
        }
        if (!busy.isEmpty()) {
            consumer.pause(busy);
        }
    }

    private void work() {
        long started = System.nanoTime();
        boolean progress = true;
        while (progress && System.nanoTime() - started < WORK_BUDGET_NANOS && running) {
            progress = false;
            for (Map.Entry<TopicPartition, ArrayDeque<ConsumerRecord<String, byte[]>>> e : queues.entrySet()) {
                long now = System.nanoTime();
                if (databaseRetryAt - now > 0) {
                    return;
                }
                TopicPartition tp = e.getKey();
                ArrayDeque<ConsumerRecord<String, byte[]>> queue = e.getValue();
                Long at = retryAt.get(tp);
                if (queue.isEmpty() || (at != null && at - now > 0)) {
                    continue;
                }
                // One record per partition per round, so partitions take turns.
                if (step(tp, queue.peek())) {
                    queue.poll();
                    commitUnknown.remove(tp);
                    attempts.remove(tp);
                    retryAt.remove(tp);
                    lastError.remove(tp);
                    if (queue.isEmpty()) {
                        consumer.resume(List.of(tp));
                    }
                }
                progress = true;
            }
        }
    }

    /** Works on one record; returns whether it is done (applied, a duplicate, or recorded as failed). */
    private boolean step(TopicPartition tp, ConsumerRecord<String, byte[]> record) {
        UUID id = messageId(record);
        int failures = attempts.getOrDefault(tp, 0);
        try {
            Connection c = connection();
            if (failures >= maxAttempts) {
                FailedMessage failed = new FailedMessage(consumerName, id, record.topic(), record.partition(),
                        record.offset(), record.key(), record.value(), failures, reason(lastError.get(tp)), null);
                inbox.recordFailure(c, failed);
                c.commit();
                failedCount.incrementAndGet();
                log.error("Inbox consumer {} gave up on {}-{}@{} (message {}) after {} attempts: {}", consumerName,
                        record.topic(), record.partition(), record.offset(), id, failures, failed.reason());
                listener.failed(failed);
            } else {
                boolean ran = inbox.process(c, consumerName, id, tx -> handler.handle(tx, record, id));
                try {
                    c.commit();
                } catch (SQLException | RuntimeException e) {
                    if (ran) {
                        // The COMMIT may have been applied before the connection failed (its reply lost): the
                        // retry will tell, by finding the id recorded or not.
                        commitUnknown.put(tp, record.offset());
                    }
                    throw e;
                }
                Long unknownAt = commitUnknown.remove(tp);
                if (ran) {
                    applied.incrementAndGet();
                    listener.applied(record, id);
                } else if (unknownAt != null && unknownAt == record.offset()) {
                    // This very record's previous COMMIT failed on the connection but had been applied: its effect
                    // committed once, then, and it is no duplicate of another delivery.
                    log.info("Inbox consumer {}: the commit of {}-{}@{} (message {}) had succeeded although the"
                            + " connection failed during it", consumerName, record.topic(), record.partition(),
                            record.offset(), id);
                    applied.incrementAndGet();
                    listener.applied(record, id);
                } else {
                    duplicates.incrementAndGet();
                    listener.duplicate(record, id);
                }
            }
            databaseFailures = 0;
            done.put(tp, new OffsetAndMetadata(record.offset() + 1));
            return true;
        } catch (InboxHandlerException e) {
            rollback();
            if (!connectionValid()) {
                databaseFailed(e);
                return false;
            }
            int attempt = failures + 1;
            attempts.put(tp, attempt);
            lastError.put(tp, e.getCause());
            long backoff = backoff(attempt);
            retryAt.put(tp, System.nanoTime() + backoff);
            log.warn("Inbox consumer {}: handler failed on {}-{}@{} (message {}), attempt {} of {}{}", consumerName,
                    record.topic(), record.partition(), record.offset(), id, attempt, maxAttempts,
                    attempt < maxAttempts ? ", retrying in " + TimeUnit.NANOSECONDS.toMillis(backoff) + " ms" : "",
                    e.getCause());
            listener.handlerFailed(record, id, attempt, e.getCause());
            return false;
        } catch (StoreException | SQLException e) {
            rollback();
            databaseFailed(e);
            return false;
        } catch (RuntimeException e) {
            // Neither the handler nor the database said what failed (a broken pool, say): treat it as the database.
            rollback();
            databaseFailed(e);
            return false;
        }
    }

    private void databaseFailed(Throwable e) {
        closeConnection();
        databaseFailures++;
        long backoff = backoff(databaseFailures);
        databaseRetryAt = System.nanoTime() + backoff;
        log.warn("Inbox consumer {}: the database failed ({} in a row), retrying in {} ms: {}", consumerName,
                databaseFailures, TimeUnit.NANOSECONDS.toMillis(backoff), e.toString());
        listener.databaseUnavailable(e);
    }

    private long backoff(int attempt) {
        return retries.nanos(attempt);
    }

    private UUID messageId(ConsumerRecord<String, byte[]> record) {
        if (messageIdHeader != null) {
            Header header = record.headers().lastHeader(messageIdHeader);
            if (header != null && header.value() != null && header.value().length > 0) {
                return MessageIds.fromHeader(header.value());
            }
        }
        return fallbackId(record.topic(), record.partition(), record.offset());
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

    private static String reason(Throwable error) {
        if (error == null) {
            return "(no reason recorded)";
        }
        StringBuilder out = new StringBuilder(error.toString());
        for (Throwable cause = error.getCause(); cause != null && cause != error; cause = cause.getCause()) {
            out.append("; caused by ").append(cause);
        }
        return out.toString();
    }

    private Connection connection() throws SQLException {
        if (connection == null) {
            Connection c = dataSource.getConnection();
            try {
                c.setAutoCommit(false);
            } catch (SQLException e) {
                c.close();
                throw e;
            }
            connection = c;
        }
        return connection;
    }

    private boolean connectionValid() {
        try {
            return connection != null && connection.isValid(VALIDITY_CHECK_SECONDS);
        } catch (SQLException e) {
            return false;
        }
    }

    private void rollback() {
        if (connection != null) {
            try {
                connection.rollback();
            } catch (SQLException | RuntimeException e) {
                log.debug("rollback failed", e);
            }
        }
    }

    private void closeConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException | RuntimeException e) {
                log.debug("closing a broken connection", e);
            }
            connection = null;
        }
    }

    /** Commits the offsets of the records that are done; keeps them for the next try if Kafka is unavailable. */
    private void commit() {
        commit(done.keySet());
    }

    private void commit(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata o = done.get(tp);
            if (o != null) {
                offsets.put(tp, o);
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets, COMMIT_TIMEOUT);
            offsets.forEach(done::remove);
            listener.committed(offsets);
        } catch (RebalanceInProgressException | org.apache.kafka.common.errors.TimeoutException e) {
            log.debug("Inbox consumer {}: offset commit deferred: {}", consumerName, e.toString());
        } catch (KafkaException e) {
            if (e instanceof WakeupException) {
                throw e;
            }
            // The partitions went to another member (CommitFailedException) or the commit is refused: what is done
            // stays done in the database, and the inbox skips it when it comes again.
            offsets.keySet().forEach(done::remove);
            log.warn("Inbox consumer {}: offset commit failed, {} partition(s) will redeliver records that are"
                    + " already applied (the inbox skips them): {}", consumerName, offsets.size(), e.toString());
        }
    }

    private void purgeIfDue() {
        if (System.nanoTime() - nextPurge < 0) {
            return;
        }
        nextPurge = System.nanoTime() + purgeInterval.toNanos();
        try {
            int purged = inbox.purgeExpired();
            log.debug("Inbox consumer {}: purged {} expired inbox entries", consumerName, purged);
        } catch (RuntimeException e) {
            log.warn("Inbox consumer {}: purging expired inbox entries failed; trying again in {}", consumerName,
                    purgeInterval, e);
        }
    }

    private void forget(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            queues.remove(tp);
            attempts.remove(tp);
            retryAt.remove(tp);
            lastError.remove(tp);
            commitUnknown.remove(tp);
        }
    }

    /** Runs inside poll(), on the consumer thread, between records: nothing is half done. */
    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            try {
                commit(partitions);
            } finally {
                partitions.forEach(done::remove);
                forget(partitions);
            }
            log.info("Inbox consumer {}: partitions revoked {}", consumerName, partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            partitions.forEach(done::remove);
            forget(partitions);
            log.warn("Inbox consumer {}: partitions lost {} (nothing committed for them)", consumerName, partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            log.info("Inbox consumer {}: partitions assigned {}", consumerName, partitions);
        }
    }

    /**
     * Configures a {@link KafkaInboxConsumer}. Not thread-safe; {@link #build()} validates the whole and creates the
     * Kafka consumer (it connects on {@link KafkaInboxConsumer#start()}).
     */
    public static final class Builder {
        private final KafkaSettings settings = new KafkaSettings();
        private final List<String> topics = new ArrayList<>();
        private DataSource dataSource;
        private Inbox inbox;
        private String consumerName;
        private RecordHandler handler;
        private Listener listener = new Listener() {
        };
        private String messageIdHeader = KafkaMessageBroker.DEFAULT_MESSAGE_ID_HEADER;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;

        private Builder() {
        }

        /**
         * Adds Kafka consumer properties; later values win.
         *
         * @param properties Kafka consumer properties (TLS, SASL, ...), copied at once; keys are converted with
         *                   {@code toString()}. Not {@code null}, and no value {@code null}. The enforced settings
         *                   (see the class documentation) are checked by {@link #build()}.
         * @return this builder
         * @throws NullPointerException     if {@code properties} is {@code null}
         * @throws IllegalArgumentException if a name is blank or a value {@code null}
         */
        public Builder properties(Map<?, ?> properties) {
            settings.putAll(properties);
            return this;
        }

        /**
         * Sets one Kafka consumer property, replacing an earlier value of it.
         *
         * @param name  the property's name, as in {@link ConsumerConfig}; not blank
         * @param value its value, a string or the type Kafka expects; not {@code null}
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is {@code null} or blank or {@code value} is {@code null}
         */
        public Builder property(String name, Object value) {
            settings.put(name, value);
            return this;
        }

        /**
         * Shorthand for {@code bootstrap.servers}.
         *
         * @param servers a comma-separated list of {@code host:port} pairs to reach the cluster; not blank
         * @return this builder
         * @throws IllegalArgumentException if {@code servers} is {@code null} or blank
         */
        public Builder bootstrapServers(String servers) {
            if (servers == null || servers.isBlank()) {
                throw new IllegalArgumentException("bootstrapServers must not be blank: '" + servers + "'");
            }
            settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
            return this;
        }

        /**
         * Shorthand for {@code group.id}; also the inbox consumer name unless {@link #consumerName} is set.
         *
         * @param groupId the Kafka consumer group, under which offsets are committed; not blank. As the inbox
         *                consumer name it must also be at most {@value Inbox#MAX_CONSUMER_LENGTH} characters.
         * @return this builder
         * @throws IllegalArgumentException if {@code groupId} is {@code null} or blank
         */
        public Builder groupId(String groupId) {
            if (groupId == null || groupId.isBlank()) {
                throw new IllegalArgumentException("groupId must not be blank: '" + groupId + "'");
            }
            settings.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            return this;
        }

        /**
         * The topics to consume; at least one. Calls add up.
         *
         * @param topics topic names, valid as Kafka wants them (1 to 249 characters of {@code [a-zA-Z0-9._-]})
         * @return this builder
         * @throws IllegalArgumentException if a name is {@code null} or not a valid topic name (the names before
         *                                  it are added)
         */
        public Builder topics(String... topics) {
            for (String topic : topics) {
                String problem = KafkaSettings.topicProblem(topic);
                if (problem != null) {
                    throw new IllegalArgumentException(problem);
                }
                this.topics.add(topic);
            }
            return this;
        }

        /**
         * Where transactions are opened: the database of the inbox and of the handler's effects.
         *
         * @param dataSource the data source (a pool, usually); not {@code null}. The consumer holds one connection
         *                   of it while it runs and replaces it after a database failure.
         * @return this builder
         * @throws NullPointerException if {@code dataSource} is {@code null}
         */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
            return this;
        }

        /**
         * The inbox (its tables must be in {@link #dataSource}'s database).
         *
         * @param inbox the inbox that records message ids and failed messages, for example a
         *              {@code PostgresInbox} or {@code MySqlInbox}; not {@code null}
         * @return this builder
         * @throws NullPointerException if {@code inbox} is {@code null}
         */
        public Builder inbox(Inbox inbox) {
            this.inbox = Objects.requireNonNull(inbox, "inbox must not be null");
            return this;
        }

        /**
         * The name the inbox records entries under; default the group id. Two consumers under the same name
         * deduplicate against each other; under different names each applies every message once.
         *
         * @param consumerName 1 to {@value Inbox#MAX_CONSUMER_LENGTH} characters, not blank, without control
         *                     characters
         * @return this builder
         * @throws IllegalArgumentException if {@code consumerName} is {@code null} or not such a name
         */
        public Builder consumerName(String consumerName) {
            this.consumerName = Inbox.validateConsumer(consumerName);
            return this;
        }

        /**
         * What to do with each new message. Required.
         *
         * @param handler applies each record's effect; runs on the consumer's thread, one record at a time, so it
         *                need not be thread-safe unless shared. Not {@code null}.
         * @return this builder
         * @throws NullPointerException if {@code handler} is {@code null}
         */
        public Builder handler(RecordHandler handler) {
            this.handler = Objects.requireNonNull(handler, "handler must not be null");
            return this;
        }

        /**
         * Hears what happens to records; default none.
         *
         * @param listener called on the consumer's thread, so it must return quickly and should not throw; not
         *                 {@code null}
         * @return this builder
         * @throws NullPointerException if {@code listener} is {@code null}
         */
        public Builder listener(Listener listener) {
            this.listener = Objects.requireNonNull(listener, "listener must not be null");
            return this;
        }

        /**
         * The header that carries the message id; default {@value KafkaMessageBroker#DEFAULT_MESSAGE_ID_HEADER},
         * as the outbox's broker writes it. Null: use (topic, partition, offset) for every record.
         *
         * @param name the header's name, or {@code null} for none; not blank
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is blank
         */
        public Builder messageIdHeader(String name) {
            if (name != null && name.isBlank()) {
                throw new IllegalArgumentException("messageIdHeader must not be blank: '" + name + "'");
            }
            this.messageIdHeader = name;
            return this;
        }

        /**
         * How many times the handler may fail on a record before it is recorded as failed; default 5, 1 to 100.
         *
         * @param maxAttempts the attempts per record, from 1 (no retry) to 100; database failures do not count
         * @return this builder
         * @throws IllegalArgumentException if {@code maxAttempts} is outside 1 to 100
         */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1 || maxAttempts > 100) {
                throw new IllegalArgumentException("maxAttempts must be between 1 and 100: " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * The wait after the first failure; doubled after each next one. Default 100 ms, at least 1 ms.
         *
         * @param backoff the first wait, at least 1 ms and at most {@link #maxBackoff} (checked by {@link #build()})
         * @return this builder
         * @throws NullPointerException     if {@code backoff} is {@code null}
         * @throws IllegalArgumentException if {@code backoff} is under 1 ms
         */
        public Builder initialBackoff(Duration backoff) {
            this.initialBackoff = positive("initialBackoff", backoff);
            return this;
        }

        /**
         * The longest wait between two tries (of a handler or of the database). Default 5 s.
         *
         * @param backoff the cap of the waits, at least 1 ms and at least {@link #initialBackoff} (checked by
         *                {@link #build()})
         * @return this builder
         * @throws NullPointerException     if {@code backoff} is {@code null}
         * @throws IllegalArgumentException if {@code backoff} is under 1 ms
         */
        public Builder maxBackoff(Duration backoff) {
            this.maxBackoff = positive("maxBackoff", backoff);
            return this;
        }

        /**
         * How often expired inbox entries are purged ({@link Inbox#purgeExpired()}); default 1 hour.
         *
         * @param interval the time between two purges, on the consumer's thread, the first one interval after the
         *                 start; at least 1 ms
         * @return this builder
         * @throws NullPointerException     if {@code interval} is {@code null}
         * @throws IllegalArgumentException if {@code interval} is under 1 ms
         */
        public Builder purgeInterval(Duration interval) {
            this.purgeInterval = positive("purgeInterval", interval);
            return this;
        }

        private static Duration positive(String name, Duration d) {
            Objects.requireNonNull(d, name + " must not be null");
            if (d.toMillis() < 1) {
                throw new IllegalArgumentException(name + " must be at least 1 ms: " + d);
            }
            return d;
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
            if (topics.isEmpty()) {
                throw new IllegalArgumentException("topics must be set: at least one topic");
            }
            if (dataSource == null) {
                throw new IllegalArgumentException("dataSource must be set");
            }
            if (inbox == null) {
                throw new IllegalArgumentException("inbox must be set");
            }
            if (handler == null) {
                throw new IllegalArgumentException("handler must be set");
            }
            if (maxBackoff.compareTo(initialBackoff) < 0) {
                throw new IllegalArgumentException("maxBackoff (" + maxBackoff + ") must be at least initialBackoff ("
                        + initialBackoff + ")");
            }
            KafkaSettings s = new KafkaSettings(settings);
            String servers = s.string(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
            if (servers == null || servers.isEmpty()) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG
                        + "' must be set");
            }
            String group = s.string(ConsumerConfig.GROUP_ID_CONFIG);
            if (group == null || group.isEmpty()) {
                throw new IllegalArgumentException("Kafka property '" + ConsumerConfig.GROUP_ID_CONFIG
                        + "' must be set: offsets are committed for the group");
            }
            s.require(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false", "offsets are committed after the"
                    + " database commit; an automatic commit could skip a record whose effect never committed");
            s.forbid(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "keys are read as UTF-8 strings");
            s.forbid(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "values are read as bytes");
            s.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            return new KafkaInboxConsumer(this, s.toMap());
        }
    }
}
