package dev.outbox;

import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;
import java.util.UUID;

/**
 * A message a consumer gave up on: its handler kept failing. It stays in the inbox's failed-messages table, with
 * the reason, until an operator deals with it. Immutable and thread-safe; the value is copied in and out.
 *
 * @param consumer  the consumer's name
 * @param messageId the message's id
 * @param topic     where it came from (for Kafka, the topic)
 * @param partition its partition, or -1 where that means nothing
 * @param offset    its offset, or -1 where that means nothing
 * @param key       its key, or null
 * @param value     its value, or null
 * @param attempts  how many times the handler failed
 * @param reason    why, for a human (the last failure)
 * @param failedAt  when it was recorded, or null before it was written
 */
public record FailedMessage(String consumer, UUID messageId, String topic, int partition, long offset, String key,
                            byte[] value, int attempts, String reason, Instant failedAt) {
    /**
     * Validates and copies.
     *
     * @param consumer  the consumer's name; see {@link Inbox#validateConsumer}
     * @param messageId the message's id; not null
     * @param topic     where it came from; not null
     * @param partition its partition, or -1
     * @param offset    its offset, or -1
     * @param key       its key, or null
     * @param value     its value, copied; or null
     * @param attempts  how many times the handler failed, 0 or more
     * @param reason    why; not null
     * @param failedAt  when it was recorded, or null
     * @throws IllegalArgumentException if {@code consumer} is not valid or {@code attempts} is negative
     * @throws NullPointerException     if {@code messageId}, {@code topic} or {@code reason} is null
     */
    public FailedMessage {
        Inbox.validateConsumer(consumer);
        Objects.requireNonNull(messageId, "messageId must not be null");
        Objects.requireNonNull(topic, "topic must not be null");
        Objects.requireNonNull(reason, "reason must not be null");
        if (attempts < 0) {
            throw new IllegalArgumentException("attempts must not be negative: " + attempts);
        }
        value = value == null ? null : value.clone();
    }

    /**
     * A copy of the value, or null.
     *
     * @return a new copy on each call, or null
     */

    @Override
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FailedMessage f && consumer.equals(f.consumer) && messageId.equals(f.messageId)
                && topic.equals(f.topic) && partition == f.partition && offset == f.offset
                && Objects.equals(key, f.key) && Arrays.equals(value, f.value) && attempts == f.attempts
                && reason.equals(f.reason) && Objects.equals(failedAt, f.failedAt);
    }

    @Override
    public int hashCode() {
        return Objects.hash(consumer, messageId, topic, partition, offset);
    }

    @Override
    public String toString() {
        return "FailedMessage{consumer=" + consumer + ", messageId=" + messageId + ", source=" + topic + "-"
                + partition + "@" + offset + ", attempts=" + attempts + ", reason=" + reason + '}';
    }
}
