package dev.outbox.broker.kafka;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * The offsets of the records that are done (their database transaction committed) and not yet committed to Kafka,
 * and their commit. Used by the consumer thread only; not thread-safe.
 */
final class InboxOffsets {
    private static final Duration COMMIT_TIMEOUT = Duration.ofSeconds(5);
    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    private final KafkaConsumer<String, byte[]> consumer;
    private final KafkaInboxConsumer.Listener listener;
    private final String consumerName;
    private final Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();

    InboxOffsets(KafkaConsumer<String, byte[]> consumer, KafkaInboxConsumer.Listener listener, String consumerName) {
        this.consumer = consumer;
        this.listener = listener;
        this.consumerName = consumerName;
    }

    /** The record at {@code offset} of {@code tp} is done: the next offset to read is one past it. */
    void done(TopicPartition tp, long offset) {
        done.put(tp, new OffsetAndMetadata(offset + 1));
    }

    /** Commits the offsets of the records that are done; keeps them for the next try if Kafka is unavailable. */
    void commit() {
        commit(done.keySet());
    }

    /** Commits the offsets of {@code partitions}' records that are done, as {@link #commit()}. */
    void commit(Collection<TopicPartition> partitions) {
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

    /** Forgets what is done in partitions this consumer no longer owns. */
    void forget(Collection<TopicPartition> partitions) {
        partitions.forEach(done::remove);
    }
}
