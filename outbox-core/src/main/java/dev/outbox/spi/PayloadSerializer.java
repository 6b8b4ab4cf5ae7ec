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
 * <p>Implementations must be thread-safe: one instance serves every thread of an application.
 */
public interface PayloadSerializer {
    /** The header that carries {@link #contentType()} on every message built by {@link #message}. */
    String CONTENT_TYPE_HEADER = "content-type";

    /** The media type of what {@link #serialize} writes, e.g. {@code application/json}; never null or blank. */
    String contentType();

    /**
     * Serializes {@code payload}, which is not null.
     *
     * @throws PayloadSerializationException if it cannot be serialized, naming its class (never its content,
     *                                       which may be confidential)
     */
    byte[] serialize(Object payload);

    /**
     * A message to {@code topic} with {@code key} whose value is the serialized {@code payload} and whose first
     * header is {@value #CONTENT_TYPE_HEADER}: {@link #contentType()}. A null payload makes a tombstone (no value,
     * no header).
     *
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
