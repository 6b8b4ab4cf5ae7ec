package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A message as a consumer of the broker read it back, for {@link MessageBrokerContract}. Immutable and
 * thread-safe; the value is copied in and out.
 *
 * @param topic   the topic it was read from
 * @param key     its key
 * @param value   its value, null for a tombstone
 * @param headers its headers in the order the broker returned them
 */
public record ReceivedMessage(String topic, String key, byte[] value, List<Header> headers) {

    /**
     * Copies {@code value} and {@code headers}.
     *
     * @param topic   the topic it was read from; not {@code null}
     * @param key     its key, {@code null} if it had none
     * @param value   its value, {@code null} for a tombstone; copied
     * @param headers its headers in the order the broker returned them; not {@code null}, no {@code null}
     *                element; copied
     * @throws NullPointerException if {@code topic} or {@code headers} is {@code null} or a header is
     */
    public ReceivedMessage {
        Objects.requireNonNull(topic, "topic");
        value = value == null ? null : value.clone();
        headers = List.copyOf(headers);
    }

    /**
     * What a consumer should read back for {@code record}.
     *
     * @param record a record as the dispatcher hands it to the broker; not {@code null}
     * @return its topic, key, value and headers, without the headers a broker adds (such as the message id)
     */
    public static ReceivedMessage of(OutboxRecord record) {
        return new ReceivedMessage(record.topic(), record.key(), record.message().value(),
                record.message().headers());
    }

    /**
     * The value.
     *
     * @return a copy of the value (changing it changes nothing here), or {@code null} for a tombstone
     */
    @Override
    public byte[] value() {
        return value == null ? null : value.clone();
    }

    /**
     * The value decoded as UTF-8.
     *
     * @return the text (malformed bytes replaced by U+FFFD), or {@code null} for a tombstone
     */
    public String valueAsString() {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReceivedMessage m && topic.equals(m.topic) && Objects.equals(key, m.key)
                && Arrays.equals(value, m.value) && headers.equals(m.headers);
    }

    @Override
    public int hashCode() {
        return Objects.hash(topic, key, Arrays.hashCode(value), headers);
    }

    @Override
    public String toString() {
        return "ReceivedMessage{topic=" + topic + ", key=" + key + ", value="
                + (value == null ? "tombstone" : value.length + " bytes") + ", headers=" + headers + '}';
    }
}
