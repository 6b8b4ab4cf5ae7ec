package dev.outbox.spi;

import dev.outbox.OutboxMessage;

/**
 * Turns an application's payload object (an order, an event) into the bytes of an outbox message's value, and
 * names their format. Implementations live in their own modules (for example {@code outbox-jackson} for JSON),
 * so that core depends on no serialization library.
 *
 * <pre>{@code
 * PayloadSerializer json = JacksonPayloadSerializer.create();
 * OutboxMessage m = json.message("orders", "customer-42", new OrderPlaced(1001, "customer-42"));
 * // m.value() is the JSON; m.headers() holds content-type: application/json
 * }</pre>
 *
 * <p>What {@link #serialize} writes, {@link #deserialize} reads back.
 *
 * <p>Implementations must be thread-safe: one instance serves every thread of an application.
 */
public interface PayloadSerializer {
    /** The header that carries {@link #contentType()} on every message built by {@link #message}. */
    String CONTENT_TYPE_HEADER = "content-type";

    /**
     * The media type of what {@link #serialize} writes, e.g. {@code application/json}; never null or blank.
     *
     * @return the media type
     */
    String contentType();

    /**
     * Serializes {@code payload}, which is not null.
     *
     * @param payload the object to serialize; not null
     * @return the serialized bytes; never null

     * @throws PayloadSerializationException if it cannot be serialized, naming its class (never its content,
     *                                       which may be confidential)
     */
    byte[] serialize(Object payload);

    /**
     * Reads a value written by {@link #serialize} back as a {@code type}: what in-process handlers
     * ({@code dev.outbox.handlers.HandlerMessageBroker}) and consumers receive.
     *
     * @param value the message's value, not null (a tombstone has no payload to read)
     * @param type  the payload's class, not null
     * @param <T>   the payload's type
     * @return the payload; never null
     * @throws PayloadSerializationException if {@code value} is not a {@code type} in this format, naming the type
     *                                       and the value's length (never its content)
     */
    <T> T deserialize(byte[] value, Class<T> type);

    /**
     * A message to {@code topic} with {@code key} whose value is the serialized {@code payload} and whose first
     * header is {@value #CONTENT_TYPE_HEADER}: {@link #contentType()}. A null payload makes a tombstone (no value,
     * no header).
     *
     * @param topic   the message's topic
     * @param key     the message's key
     * @param payload the object to serialize, or null for a tombstone
     * @return the message
     * @throws IllegalArgumentException      if the topic or key is invalid (see {@link OutboxMessage})

     * @throws PayloadSerializationException if the payload cannot be serialized
     */
    default OutboxMessage message(String topic, String key, Object payload) {
        if (payload == null) {
            return OutboxMessage.tombstone(topic, key);
        }
        return OutboxMessage.builder(topic, key).value(serialize(payload))
                .header(CONTENT_TYPE_HEADER, contentType()).build();
    }
}
