package dev.outbox.broker.kafka;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.Excerpt;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * How the Kafka adapter reads a Kafka failure: permanent (the record can never pass), an outage (every record fails
 * alike), or retriable. One place, used by the idempotent and the transactional sending and by the topic checks.
 * Stateless.
 */
final class KafkaErrors {
    private KafkaErrors() {
    }

    /**
     * Maps a Kafka failure to a {@link DeliveryException}: permanent for what the record can never pass (too
     * large, invalid, not authorized for its topic); an outage for what fails every record alike (Kafka's retriable
     * errors — timeouts, lost leaders, too few in-sync replicas, lost connections — a failed authentication, a
     * closed producer), which the dispatcher retries for as long as it lasts without counting or parking; retriable
     * (counted towards the record's attempts) for anything else.
     */
    static DeliveryException classify(OutboxRecord record, Throwable error) {
        Throwable cause = unwrap(error);
        String what = "record " + record.id() + " (topic '" + record.topic() + "', key '" + Excerpt.of(record.key()) + "')";
        if (isPermanent(cause)) {
            return DeliveryException.permanent("Kafka can never accept " + what + ": " + describe(cause), cause);
        }
        if (isOutage(cause)) {
            return DeliveryException.outage("Kafka is unavailable; it did not acknowledge " + what + ": "
                    + describe(cause), cause);
        }
        return DeliveryException.retriable("Kafka did not acknowledge " + what + ": " + describe(cause), cause);
    }

    static boolean isOutage(Throwable cause) {
        return cause instanceof org.apache.kafka.common.errors.RetriableException
                || cause instanceof org.apache.kafka.common.errors.AuthenticationException
                || cause instanceof org.apache.kafka.common.errors.InterruptException
                || cause instanceof IllegalStateException; // the producer was closed
    }

    static boolean isPermanent(Throwable cause) {
        return cause instanceof RecordTooLargeException
                || cause instanceof RecordBatchTooLargeException
                || cause instanceof InvalidTopicException
                || cause instanceof AuthorizationException
                || cause instanceof SerializationException
                || cause instanceof InvalidRecordException
                || cause instanceof InvalidTimestampException
                || cause instanceof IllegalArgumentException;
    }

    /**
     * A topic that does not exist shows up as a metadata wait that ran out ("not present in metadata") or, if
     * the topic vanished later, as unknown-topic errors until the delivery timeout; neither proves it is gone.
     */
    static boolean suspectsMissingTopic(Throwable cause) {
        return cause instanceof UnknownTopicOrPartitionException
                || (cause instanceof TimeoutException && cause.getMessage() != null
                && cause.getMessage().contains("not present in metadata"));
    }

    /** The failure inside the wrappers of {@link java.util.concurrent.CompletableFuture} and {@code Future}. */
    static Throwable unwrap(Throwable t) {
        Throwable c = t;
        while ((c instanceof CompletionException || c instanceof ExecutionException) && c.getCause() != null) {
            c = c.getCause();
        }
        return c;
    }

    /** The failure's type and message, for a reason an operator reads. */
    static String describe(Throwable t) {
        return t == null ? "unknown" : t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": "
                + t.getMessage());
    }
}
