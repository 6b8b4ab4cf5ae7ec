package dev.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What an application writes to the outbox in its own transaction: a destination {@code topic}, a non-null
 * {@code key} (messages of one key are delivered in the order they were written), a {@code value} of bytes
 * ({@code null} is a tombstone) and ordered headers (repeats allowed).
 *
 * <p>Two delivery options, both off unless set and both carried out by the store (which refuses a message asking
 * for an option it was not built with, naming it — never sending early or twice silently):
 * <ul>
 *   <li><b>Not before</b> ({@link Builder#deliverAt(Instant)}, {@link Builder#deliverAfter(Duration)}): the message
 *       is not sent before that time, measured on the database's clock. By default its key's later messages wait
 *       behind it, keeping the key's order (see the store's {@code scheduling} option).</li>
 *   <li><b>Idempotency key</b> ({@link Builder#idempotencyKey(String)}): a second message with the same idempotency
 *       key in the same outbox, written within the store's retention, is not written — skipped, or refused with a
 *       {@link DuplicateMessageException}, as the store is configured. The database's unique index decides.</li>
 * </ul>
 * <p>Validated on creation: every error names the bad value. Immutable and thread-safe; byte arrays are
 * copied in and out.
 */
public final class OutboxMessage {
    /** Longest topic name accepted (Kafka's own limit). */
    public static final int MAX_TOPIC_LENGTH = 249;
    /**
     * The header that makes a message <em>latest only</em> ({@link Builder#latestOnly()}): once a newer message of its
     * topic and key is queued behind it, it is not sent. Any writer may set it (any value); it is sent on with the
     * message.
     */
    public static final String LATEST_ONLY_HEADER = "outbox-latest-only";
    /** Longest idempotency key accepted, in characters. */
    public static final int MAX_IDEMPOTENCY_KEY_LENGTH = 200;

    private final String topic;
    private final String key;
    private final byte[] value;
    private final List<Header> headers;
    private final Instant deliverAt;
    private final Duration deliverAfter;
    private final String idempotencyKey;

    private OutboxMessage(String topic, String key, byte[] value, List<Header> headers) {
        this(topic, key, value, headers, null, null, null);
    }

    private OutboxMessage(String topic, String key, byte[] value, List<Header> headers, Instant deliverAt,
                          Duration deliverAfter, String idempotencyKey) {
        this.topic = MessageChecks.topic(topic);
        if (key == null) {
            throw new IllegalArgumentException("key must not be null (topic '" + topic + "')");
        }
        this.key = key;
        this.value = value == null ? null : value.clone();
        this.headers = MessageChecks.headers(headers);
        MessageChecks.deliveryTime(deliverAt, deliverAfter, topic, key);
        this.deliverAt = deliverAt;
        this.deliverAfter = deliverAfter;
        this.idempotencyKey = MessageChecks.idempotencyKey(idempotencyKey, topic);
    }

    /**
     * A message without headers; {@code value} null is a tombstone.
     *
     * @param topic the destination topic: not null or blank, at most {@value #MAX_TOPIC_LENGTH} characters, without
     *              whitespace or control characters
     * @param key   the key; not null (it may be empty)
     * @param value the value, copied; or null for a tombstone
     * @return the message
     * @throws IllegalArgumentException naming the bad value if {@code topic} or {@code key} is not valid
     */
    public static OutboxMessage of(String topic, String key, byte[] value) {
        return new OutboxMessage(topic, key, value, List.of());
    }

    /**
     * A message whose value is {@code value} in UTF-8, without headers; {@code value} null is a tombstone.
     *
     * @param topic the destination topic; see {@link #of(String, String, byte[])}
     * @param key   the key; not null
     * @param value the value, encoded as UTF-8; or null for a tombstone
     * @return the message
     * @throws IllegalArgumentException naming the bad value if {@code topic} or {@code key} is not valid
     */
    public static OutboxMessage of(String topic, String key, String value) {
        return of(topic, key, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * A message with headers, kept in the given order.
     *
     * @param topic   the destination topic; see {@link #of(String, String, byte[])}
     * @param key     the key; not null
     * @param value   the value, copied; or null for a tombstone
     * @param headers the headers, copied; not null (an empty list for none), no null element
     * @return the message
     * @throws IllegalArgumentException naming the bad value if {@code topic}, {@code key} or {@code headers} is not
     *                                  valid
     */
    public static OutboxMessage of(String topic, String key, byte[] value, List<Header> headers) {
        return new OutboxMessage(topic, key, value, headers);
    }

    /**
     * A tombstone: a message with a null value, which compacts away earlier values of {@code key}.
     *
     * @param topic the destination topic; see {@link #of(String, String, byte[])}
     * @param key   the key; not null
     * @return the message
     * @throws IllegalArgumentException naming the bad value if {@code topic} or {@code key} is not valid
     */
    public static OutboxMessage tombstone(String topic, String key) {
        return new OutboxMessage(topic, key, null, List.of());
    }

    /**
     * Starts a builder for a message to {@code topic} with {@code key}. Both are checked by {@link Builder#build()},
     * not here.
     *
     * @param topic the destination topic
     * @param key   the key
     * @return a new builder, with no value (a tombstone) and no headers
     */
    public static Builder builder(String topic, String key) {
        return new Builder(topic, key);
    }

    /**
     * The destination topic.
     *
     * @return the topic; never null or blank
     */
    public String topic() {
        return topic;
    }

    /**
     * The key: messages of one key are delivered in the order they were written.
     *
     * @return the key; never null, possibly empty
     */
    public String key() {
        return key;
    }

    /**
     * A copy of the value, or {@code null} for a tombstone.
     *
     * @return a new copy on each call, or null
     */
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    /**
     * The value's length in bytes, 0 for a tombstone, without copying it.
     *
     * @return the length in bytes, 0 or more
     */
    public int valueSize() {
        return value == null ? 0 : value.length;
    }

    /**
     * Whether this is a tombstone.
     *
     * @return true if the value is null (an empty value is not a tombstone)
     */
    public boolean isTombstone() {
        return value == null;
    }

    /**
     * The headers in the order they were given; immutable.
     *
     * @return the headers; empty, never null, if there are none
     */
    public List<Header> headers() {
        return headers;
    }

    /**
     * The time before which the message is not sent, measured on the database's clock; see
     * {@link Builder#deliverAt(Instant)}.
     *
     * @return the time, or null if not set
     */
    public Instant deliverAt() {
        return deliverAt;
    }

    /**
     * The delay, counted from the database's clock when the message is written, before which it is not sent; see
     * {@link Builder#deliverAfter(Duration)}.
     *
     * @return the delay, or null if not set
     */
    public Duration deliverAfter() {
        return deliverAfter;
    }

    /**
     * Whether the message asks not to be sent before a time ({@link #deliverAt()} or {@link #deliverAfter()}).
     *
     * @return true if either is set
     */
    public boolean isDelayed() {
        return deliverAt != null || deliverAfter != null;
    }

    /**
     * Whether the message is latest only: it carries the header {@value #LATEST_ONLY_HEADER}.
     *
     * @return true if a newer message of its topic and key makes it worthless
     */
    public boolean isLatestOnly() {
        for (int i = 0; i < headers.size(); i++) {
            if (headers.get(i).name().equals(LATEST_ONLY_HEADER)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The name the writer gave this message so that the same message written again is not written twice; see
     * {@link Builder#idempotencyKey(String)}.
     *
     * @return the idempotency key, or null if not set
     */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    /**
     * A copy of this message with {@code headers} in place of its headers (same topic, key and value). For
     * {@link MessageDecorator}s.
     *
     * @param headers the new headers, copied; not null, no null element
     * @return a new message
     * @throws IllegalArgumentException if {@code headers} is null or holds null
     */
    public OutboxMessage withHeaders(List<Header> headers) {
        return new OutboxMessage(topic, key, value, headers, deliverAt, deliverAfter, idempotencyKey);
    }

    /**
     * A copy of this message with {@code header} appended to its headers.
     *
     * @param header the header to append; not null
     * @return a new message
     * @throws IllegalArgumentException if {@code header} is null
     */
    public OutboxMessage withHeader(Header header) {
        List<Header> more = new ArrayList<>(headers.size() + 1);
        more.addAll(headers);
        more.add(header);
        return withHeaders(more);
    }

    /**
     * A copy of this message whose headers named {@code name} are replaced by one header {@code name} →
     * {@code headerValue} (UTF-8), appended after the others; repeats of other names are kept in order.
     *
     * @param name        the header's name; not null, not empty
     * @param headerValue the header's value, encoded as UTF-8; or null for a header without a value
     * @return a new message
     * @throws IllegalArgumentException if {@code name} is null or empty
     */
    public OutboxMessage withHeaderReplaced(String name, String headerValue) {
        Header replacement = Header.of(name, headerValue);
        List<Header> more = new ArrayList<>(headers.size() + 1);
        for (Header h : headers) {
            if (!h.name().equals(name)) {
                more.add(h);
            }
        }
        more.add(replacement);
        return withHeaders(more);
    }

    /**
     * A copy of this message without its delivery options (not before, idempotency key): what the store writes to
     * the outbox once it has carried them out.
     *
     * @return this message if it has none, else a new message
     */
    public OutboxMessage withoutDeliveryOptions() {
        return deliverAt == null && deliverAfter == null && idempotencyKey == null ? this
                : new OutboxMessage(topic, key, value, headers);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutboxMessage m && topic.equals(m.topic) && key.equals(m.key)
                && Arrays.equals(value, m.value) && headers.equals(m.headers) && Objects.equals(deliverAt,
                m.deliverAt) && Objects.equals(deliverAfter, m.deliverAfter) && Objects.equals(idempotencyKey,
                m.idempotencyKey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(topic, key, Arrays.hashCode(value), headers, deliverAt, deliverAfter, idempotencyKey);
    }

    @Override
    public String toString() {
        return "OutboxMessage{topic=" + topic + ", key=" + key + ", value="
                + (value == null ? "tombstone" : value.length + " bytes") + ", headers=" + headers
                + (deliverAt == null ? "" : ", deliverAt=" + deliverAt)
                + (deliverAfter == null ? "" : ", deliverAfter=" + deliverAfter)
                + (idempotencyKey == null ? "" : ", idempotencyKey=" + idempotencyKey) + '}';
    }

    /** Builds an {@link OutboxMessage}; not thread-safe. */
    public static final class Builder {
        private final String topic;
        private final String key;
        private byte[] value;
        private final List<Header> headers = new ArrayList<>();
        private Instant deliverAt;
        private Duration deliverAfter;
        private String idempotencyKey;

        private Builder(String topic, String key) {
            this.topic = topic;
            this.key = key;
        }

        /**
         * Sets the value; null (the default) makes a tombstone.
         *
         * @param value the value, copied; or null
         * @return this builder
         */
        public Builder value(byte[] value) {
            this.value = value == null ? null : value.clone();
            return this;
        }

        /**
         * Sets the value to {@code value} in UTF-8.
         *
         * @param value the value, encoded as UTF-8; or null for a tombstone
         * @return this builder
         */
        public Builder value(String value) {
            return value(value == null ? null : value.getBytes(StandardCharsets.UTF_8));
        }

        /**
         * Appends a header; repeats of a name are kept.
         *
         * @param name  the header's name; not null, not empty
         * @param value the value, copied; or null
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is null or empty
         */
        public Builder header(String name, byte[] value) {
            headers.add(Header.of(name, value));
            return this;
        }

        /**
         * Appends a header whose value is {@code value} in UTF-8.
         *
         * @param name  the header's name; not null, not empty
         * @param value the value, encoded as UTF-8; or null
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is null or empty
         */
        public Builder header(String name, String value) {
            headers.add(Header.of(name, value));
            return this;
        }

        /**
         * Not before {@code time}: the message is not sent before it, measured on the database's clock (a time in the
         * past means at once). Needs a store built with scheduling; the store refuses the message otherwise. Replaces
         * a {@link #deliverAfter(Duration)} set before.
         *
         * @param time the earliest time of sending; null clears it
         * @return this builder
         */
        public Builder deliverAt(Instant time) {
            this.deliverAt = time;
            this.deliverAfter = null;
            return this;
        }

        /**
         * Not before {@code delay} from now, counted from the database's clock when the message is written. Needs a
         * store built with scheduling. Replaces a {@link #deliverAt(Instant)} set before.
         *
         * @param delay the delay, zero or more; null clears it
         * @return this builder
         * @throws IllegalArgumentException if {@code delay} is negative
         */
        public Builder deliverAfter(Duration delay) {
            MessageChecks.deliveryTime(null, delay, topic, key);
            this.deliverAfter = delay;
            this.deliverAt = null;
            return this;
        }

        /**
         * Makes the message <em>latest only</em>, for topics that carry a key's current state (an address, a price):
         * if a newer message of the same topic and key is already queued behind it when its turn to be sent comes,
         * the dispatcher does not send it but purges it as superseded — counted, told to the observers
         * ({@link DispatcherObserver#superseded}) and, with the per-key sequence, announced to consumers as a
         * deliberate skip. Adds the header {@value OutboxMessage#LATEST_ONLY_HEADER} (once), so writers in other
         * languages set it the same way.
         *
         * @return this builder
         */
        public Builder latestOnly() {
            for (Header h : headers) {
                if (h.name().equals(LATEST_ONLY_HEADER)) {
                    return this;
                }
            }
            headers.add(Header.of(LATEST_ONLY_HEADER, "1"));
            return this;
        }

        /**
         * Names the message so that writing it again (a retried request, a batch run again) does not publish it
         * twice: the store writes at most one message per idempotency key within its retention, enforced by the
         * database's unique index. Needs a store built with idempotency keys; the store refuses the message
         * otherwise.
         *
         * @param idempotencyKey not blank, at most {@value OutboxMessage#MAX_IDEMPOTENCY_KEY_LENGTH} characters; null clears it
         * @return this builder
         */
        public Builder idempotencyKey(String idempotencyKey) {
            this.idempotencyKey = idempotencyKey;
            return this;
        }

        /**
         * The message as set so far; the builder can go on being used.
         *
         * @return a new message
         * @throws IllegalArgumentException naming the bad value if the topic, the key or the idempotency key is not
         *                                  valid
         */
        public OutboxMessage build() {
            return new OutboxMessage(topic, key, value, headers, deliverAt, deliverAfter, idempotencyKey);
        }
    }
}
