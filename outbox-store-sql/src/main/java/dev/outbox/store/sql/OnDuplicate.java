package dev.outbox.store.sql;

/**
 * What a SQL store with idempotency keys on ({@link SqlStoreBuilder#idempotencyKeys}) does with a message whose
 * {@linkplain dev.outbox.OutboxMessage#idempotencyKey() idempotency key} was written before, within the retention.
 */
public enum OnDuplicate {
    /**
     * The duplicate is dropped, the other messages of the publish call are written; of two messages of one call with
     * the same idempotency key, the first is written. The default.
     */
    SKIP,
    /**
     * The publish call throws {@link dev.outbox.DuplicateMessageException}, naming the message and its idempotency
     * key, having written nothing of the call; the caller's transaction should be rolled back.
     */
    FAIL
}
