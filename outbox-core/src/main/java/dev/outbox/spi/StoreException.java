package dev.outbox.spi;

import dev.outbox.OutboxException;

/**
 * A store call failed. {@link #isRetriable()} tells the dispatcher whether trying again soon may succeed (a lost
 * connection, a timeout, a deadlock, a serialization failure, a full disk, a read-only server during a fail-over)
 * or not (a missing table, a permission error, a unique or other constraint violation): a human must act first.
 * The dispatcher retries a retriable purge, park or failure record with backoff until it succeeds; a non-retriable
 * one is reported once, and only the rows the store keeps refusing are held (their keys wait) and tried again
 * with a longer backoff, while other keys go on. Nothing is lost either way. An exception that is not a
 * {@code StoreException} counts as retriable.
 *
 * <p>Immutable; thread-safe.
 */
public class StoreException extends OutboxException {
    private static final long serialVersionUID = 1L;
    /** Whether trying again later may succeed. */
    private final boolean retriable;

    /**
     * A failure of a store call.
     *
     * @param message   what failed, naming the operation and the table
     * @param cause     the driver's exception, or null
     * @param retriable whether trying again later may succeed
     */
    public StoreException(String message, Throwable cause, boolean retriable) {
        super(message, cause);
        this.retriable = retriable;
    }

    /**
     * Whether trying again later may succeed (a lost connection, a timeout, a deadlock), as opposed to a failure a
     * retry cannot cure (a missing table, a permission, a constraint).
     *
     * @return true if a retry may succeed
     */
    public boolean isRetriable() {

        return retriable;
    }
}
