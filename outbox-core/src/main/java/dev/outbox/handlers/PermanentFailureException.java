package dev.outbox.handlers;

import dev.outbox.OutboxException;

/**
 * Thrown by a {@link MessageHandler} to say that its record can never succeed, however often it is tried (a
 * request the other system refuses for good, a payload that breaks a business rule): the dispatcher parks the record
 * at once instead of retrying it, and its {@link FallbackHandler} is called. Any other exception is retried.
 */
public class PermanentFailureException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with its reason.
     *
     * @param message why the record can never succeed, for the parked row's reason
     */
    public PermanentFailureException(String message) {
        super(message);
    }

    /**
     * Creates the exception with its reason and the failure behind it.
     *
     * @param message why the record can never succeed, for the parked row's reason
     * @param cause   what the handler caught, or null
     */
    public PermanentFailureException(String message, Throwable cause) {
        super(message, cause);
    }
}
