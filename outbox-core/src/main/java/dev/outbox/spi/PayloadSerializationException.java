package dev.outbox.spi;

import dev.outbox.OutboxException;

/**
 * A payload could not be turned into a message value by a {@link PayloadSerializer}. The message names the
 * payload's class and why, never the payload's content.
 */
public class PayloadSerializationException extends OutboxException {
    private static final long serialVersionUID = 1L;

    public PayloadSerializationException(String message, Throwable cause) {
        super(message, cause);
    }
}
