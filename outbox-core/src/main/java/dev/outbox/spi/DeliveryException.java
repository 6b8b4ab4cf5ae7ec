package dev.outbox.spi;

import dev.outbox.OutboxException;

/**
 * Completes a {@link MessageBroker#send} exceptionally. A <em>permanent</em> failure will fail again however
 * often it is retried (too large, unknown or illegal topic, not authorized): the dispatcher parks the record at
 * once. Any other failure — including an exception that is not a {@code DeliveryException} — is retriable: the
 * record is reset and re-sent, and parked only after {@code maxAttempts} failures.
 */
public class DeliveryException extends OutboxException {
    private static final long serialVersionUID = 1L;
    private final boolean permanent;

    public DeliveryException(String message, Throwable cause, boolean permanent) {
        super(message, cause);
        this.permanent = permanent;
    }

    /** A failure that may succeed when tried again. */
    public static DeliveryException retriable(String message, Throwable cause) {
        return new DeliveryException(message, cause, false);
    }

    /** A failure that can never succeed for this record. */
    public static DeliveryException permanent(String message, Throwable cause) {
        return new DeliveryException(message, cause, true);
    }

    public boolean isPermanent() {
        return permanent;
    }
}
