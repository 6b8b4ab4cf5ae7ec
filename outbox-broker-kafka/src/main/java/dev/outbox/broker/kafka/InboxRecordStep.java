package dev.outbox.broker.kafka;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.MessageIds;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.StoreException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * One record's path through the inbox: its message id, one transaction that runs it through {@link Inbox#process}
 * (or records it as failed after its last attempt), and what the outcome means — applied, a duplicate, a handler
 * failure to retry, or a database failure to wait out. Used by the consumer thread only; not thread-safe.
 */
final class InboxRecordStep {
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    private final InboxConsumerSettings settings;
    private final String consumerName;
    private final Inbox inbox;
    private final KafkaInboxConsumer.Listener listener;
    private final Backoff retries;
    private final InboxPartitions partitions;
    private final InboxDatabase database;
    private final InboxOffsets offsets;
    private final InboxCounts counts;
    private final InboxSequenceGuard sequence;

    InboxRecordStep(InboxConsumerSettings settings, Backoff retries, InboxPartitions partitions,
                    InboxDatabase database, InboxOffsets offsets, InboxCounts counts, InboxSequenceGuard sequence) {
        this.settings = settings;
        this.consumerName = settings.consumerName();
        this.inbox = settings.inbox();
        this.listener = settings.listener();
        this.retries = retries;
        this.partitions = partitions;
        this.database = database;
        this.offsets = offsets;
        this.counts = counts;
        this.sequence = sequence;
    }

    /** Works on one record; returns whether it is done (applied, a duplicate, or recorded as failed). */
    boolean step(TopicPartition tp, ConsumerRecord<String, byte[]> record) {
        long held = sequence.waitNanos(tp, record, System.nanoTime());
        if (held > 0) {
            partitions.waitUntil(tp, System.nanoTime() + held);
            return false;
        }
        UUID id = messageId(record);
        int failures = partitions.attempts(tp);
        try {
            Connection c = database.connection();
            if (failures >= settings.maxAttempts()) {
                FailedMessage failed = new FailedMessage(consumerName, id, record.topic(), record.partition(),
                        record.offset(), record.key(), record.value(), failures, reason(partitions.lastError(tp)),
                        null);
                inbox.recordFailure(c, failed);
                c.commit();
                counts.failed.incrementAndGet();
                log.error("Inbox consumer {} gave up on {}-{}@{} (message {}) after {} attempts: {}", consumerName,
                        record.topic(), record.partition(), record.offset(), id, failures, failed.reason());
                listener.failed(failed);
                sequence.done(tp, record, null);
            } else {
                // The check runs only for a new id (inside process): a redelivery is never reported.
                KeySequenceCheck.Verdict[] verdict = new KeySequenceCheck.Verdict[1];
                boolean ran = inbox.process(c, consumerName, id, tx -> {
                    verdict[0] = sequence.check(tp, record);
                    settings.handler().handle(tx, record, id);
                });
                try {
                    c.commit();
                } catch (SQLException | RuntimeException e) {
                    if (ran) {
                        // The COMMIT may have been applied before the connection failed (its reply lost): the
                        // retry will tell, by finding the id recorded or not.
                        partitions.commitUnknown(tp, record.offset());
                        sequence.commitUnknown(tp, record.offset(), verdict[0]);
                    }
                    throw e;
                }
                Long unknownAt = partitions.takeCommitUnknown(tp);
                boolean appliedBefore = !ran && unknownAt != null && unknownAt == record.offset();
                sequence.done(tp, record, ran ? verdict[0] : appliedBefore ? sequence.verdictBefore(tp, record)
                        : null);
                if (ran) {
                    counts.applied.incrementAndGet();
                    listener.applied(record, id);
                } else if (unknownAt != null && unknownAt == record.offset()) {
                    // This very record's previous COMMIT failed on the connection but had been applied: its effect
                    // committed once, then, and it is no duplicate of another delivery.
                    log.info("Inbox consumer {}: the commit of {}-{}@{} (message {}) had succeeded although the"
                            + " connection failed during it", consumerName, record.topic(), record.partition(),
                            record.offset(), id);
                    counts.applied.incrementAndGet();
                    listener.applied(record, id);
                } else {
                    counts.duplicates.incrementAndGet();
                    listener.duplicate(record, id);
                }
            }
            database.succeeded();
            offsets.done(tp, record.offset());
            return true;
        } catch (InboxHandlerException e) {
            database.rollback();
            if (e.getCause() instanceof InboxSequenceGuard.Held) {
                partitions.waitUntil(tp, System.nanoTime() + sequence.waitNanos(tp, record, System.nanoTime()));
                return false;
            }
            if (!database.connectionValid()) {
                database.failed(e);
                return false;
            }
            int attempt = failures + 1;
            long backoff = retries.nanos(attempt);
            partitions.failed(tp, attempt, e.getCause(), System.nanoTime() + backoff);
            log.warn("Inbox consumer {}: handler failed on {}-{}@{} (message {}), attempt {} of {}{}", consumerName,
                    record.topic(), record.partition(), record.offset(), id, attempt, settings.maxAttempts(),
                    attempt < settings.maxAttempts() ? ", retrying in " + TimeUnit.NANOSECONDS.toMillis(backoff)
                            + " ms" : "",
                    e.getCause());
            listener.handlerFailed(record, id, attempt, e.getCause());
            return false;
        } catch (StoreException | SQLException e) {
            database.rollback();
            database.failed(e);
            return false;
        } catch (RuntimeException e) {
            // Neither the handler nor the database said what failed (a broken pool, say): treat it as the database.
            database.rollback();
            database.failed(e);
            return false;
        }
    }

    private UUID messageId(ConsumerRecord<String, byte[]> record) {
        String header = settings.messageIdHeader();
        if (header != null) {
            Header h = record.headers().lastHeader(header);
            if (h != null && h.value() != null && h.value().length > 0) {
                return MessageIds.fromHeader(h.value());
            }
        }
        return KafkaInboxConsumer.fallbackId(record.topic(), record.partition(), record.offset());
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
}
