package dev.outbox.spi;

/**
 * A {@link Store} capability: the idempotency keys of written messages
 * ({@link dev.outbox.OutboxMessage#idempotencyKey()}), kept by the database under a unique index for the store's
 * retention so that a message written again is not written twice. The leading dispatcher calls
 * {@link #deleteExpired} now and then to keep the table small; an expired entry that is still there is reused by the
 * next write of its key, so correctness never depends on that call.
 */
public interface IdempotencyKeys {

    /**
     * Deletes up to {@code limit} entries older than the retention, in one statement.
     *
     * @param limit the most entries to delete; at least 1
     * @return how many were deleted
     */
    int deleteExpired(int limit);
}
