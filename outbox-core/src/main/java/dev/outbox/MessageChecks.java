package dev.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * The checks an {@link OutboxMessage} runs on creation, each error naming the bad value: the topic, the headers and
 * the delivery options. Stateless.
 */
final class MessageChecks {
    private MessageChecks() {
    }

    /** The topic, if valid: not null or blank, not too long, without whitespace or control characters. */
    static String topic(String topic) {
        if (topic == null) {
            throw new IllegalArgumentException("topic must not be null");
        }
        if (topic.isBlank()) {
            throw new IllegalArgumentException("topic must not be blank: '" + topic + "'");
        }
        if (topic.length() > OutboxMessage.MAX_TOPIC_LENGTH) {
            throw new IllegalArgumentException("topic is " + topic.length() + " characters, longer than "
                    + OutboxMessage.MAX_TOPIC_LENGTH + ": '" + topic.substring(0, 40) + "…'");
        }
        for (int i = 0; i < topic.length(); i++) {
            char c = topic.charAt(i);
            if (Character.isWhitespace(c) || Character.isISOControl(c)) {
                throw new IllegalArgumentException("topic '" + topic + "' contains whitespace or a control"
                        + " character at index " + i);
            }
        }
        return topic;
    }

    /** An immutable copy of the headers, if the list is not null and holds no null. */
    static List<Header> headers(List<Header> headers) {
        if (headers == null) {
            throw new IllegalArgumentException("headers must not be null (use an empty list)");
        }
        for (int i = 0; i < headers.size(); i++) {
            if (headers.get(i) == null) {
                throw new IllegalArgumentException("header " + i + " must not be null");
            }
        }
        return List.copyOf(headers);
    }

    /** Refuses both delivery times set at once, and a negative delay. */
    static void deliveryTime(Instant deliverAt, Duration deliverAfter, String topic, String key) {
        if (deliverAt != null && deliverAfter != null) {
            throw new IllegalArgumentException("deliverAt (" + deliverAt + ") and deliverAfter (" + deliverAfter
                    + ") must not both be set (topic '" + topic + "', key '" + key + "')");
        }
        if (deliverAfter != null && deliverAfter.isNegative()) {
            throw new IllegalArgumentException("deliverAfter must not be negative: " + deliverAfter + " (topic '"
                    + topic + "', key '" + key + "')");
        }
    }

    /** The idempotency key, if null or valid: not blank, not too long. */
    static String idempotencyKey(String idempotencyKey, String topic) {
        if (idempotencyKey == null) {
            return null;
        }
        if (idempotencyKey.isBlank()) {
            throw new IllegalArgumentException("idempotencyKey must not be blank: '" + idempotencyKey + "' (topic '"
                    + topic + "')");
        }
        if (idempotencyKey.length() > OutboxMessage.MAX_IDEMPOTENCY_KEY_LENGTH) {
            throw new IllegalArgumentException("idempotencyKey is " + idempotencyKey.length() + " characters, longer"
                    + " than " + OutboxMessage.MAX_IDEMPOTENCY_KEY_LENGTH + ": '" + idempotencyKey.substring(0, 40) + "…' (topic '"
                    + topic + "')");
        }
        return idempotencyKey;
    }

}
