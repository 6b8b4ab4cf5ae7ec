package dev.outbox.spi;

import dev.outbox.OutboxException;

/**
 * A store call failed. {@link #isRetriable()} tells the dispatcher whether trying again later may succeed
 * (a lost connection, a timeout, a deadlock) or not (a missing table, a permission error), in which case it is
 * reported as an error that needs a human — the dispatcher still retries with backoff, because nothing may be
 * lost.
 */
public class StoreException extends OutboxException {
    private static final long serialVersionUID = 1L;
    private final boolean retriable;

    public StoreException(String message, Throwable cause, boolean retriable) {
        super(message, cause);
        this.retriable = retriable;
    }

    public boolean isRetriable() {
        return retriable;
    }
}
