package dev.outbox.spi;

import dev.outbox.OutboxException;

/**
 * A payload could not be turned into a message value by a {@link PayloadSerializer}. The message names the
 * payload's class and why, never the payload's content.
 */
public class PayloadSerializationException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /**
     * A payload that could not be serialized.
     *
     * @param message what failed, naming the payload's class, never its content
     * @param cause   the serializer's exception, or null
     */
    public PayloadSerializationException(String message, Throwable cause) {

        super(message, cause);
    }
}
