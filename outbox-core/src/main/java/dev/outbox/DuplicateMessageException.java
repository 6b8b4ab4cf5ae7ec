package dev.outbox;

/**
 * A message's {@linkplain OutboxMessage#idempotencyKey() idempotency key} was written before, within the store's
 * retention, and the store is configured to refuse a duplicate rather than skip it. Nothing of the publish call was
 * written; the writer's transaction should be rolled back (or the duplicate treated as done, which is what it is).
 */
public final class DuplicateMessageException extends OutboxException {
    private static final long serialVersionUID = 1L;

    /** The idempotency key written before. */
    private final String idempotencyKey;

    /**
     * A duplicate refused.
     *
     * @param message        names the message (index, topic, key) and its idempotency key
     * @param idempotencyKey the idempotency key written before
     */
    public DuplicateMessageException(String message, String idempotencyKey) {
        super(message);
        this.idempotencyKey = idempotencyKey;
    }

    /**
     * The idempotency key that was written before.
     *
     * @return the key
     */
    public String idempotencyKey() {
        return idempotencyKey;
    }
}
