package dev.outbox.spring;

import java.time.Duration;

/**
 * Idempotency keys (docs/delivery-options.md): off unless {@code retention} is set. A message whose idempotency key
 * was written before, within the retention, is not written again: it is skipped, or the publish call fails, as
 * {@code on-duplicate} says. The {@code idempotency.*} properties of the store's settings:
 * {@code outbox.store.idempotency.*} in the starter (the sidecar's
 * {@code sidecar.outboxes.<name>.store.idempotency.*}).
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxIdempotencyProperties {
    /** What a message whose idempotency key was written before, within the retention, does. */
    public enum OnDuplicate {
        /** It is dropped; the other messages of the publish call are written (the default). */
        SKIP,
        /** The publish call throws {@code DuplicateMessageException}, having written nothing of the call. */
        FAIL
    }

    /**
     * How long a key is kept from being written again, counted from its write on the database's clock (the table
     * "<table>_idempotency": {@code create-schema} creates it, or the migrations in
     * {@code …/versioned/<db>-idempotency}). Unset: idempotency keys are off, and a message with one is refused.
     */
    private Duration retention;
    /** SKIP (the default): a duplicate is dropped; FAIL: the publish call throws DuplicateMessageException. */
    private OnDuplicate onDuplicate = OnDuplicate.SKIP;

    /**
     * {@return how long an idempotency key is kept from being written again, or {@code null} (the default) for
     * idempotency keys off} Bound from the {@code idempotency.retention} property.
     */
    public Duration getRetention() {
        return retention;
    }

    /**
     * Sets the {@code idempotency.retention} property.
     *
     * @param retention positive, at most 100 years, or {@code null}; checked at start-up
     */
    public void setRetention(Duration retention) {
        this.retention = retention;
    }

    /**
     * {@return what a duplicate does; {@code SKIP} by default} Bound from the {@code idempotency.on-duplicate}
     * property.
     */
    public OnDuplicate getOnDuplicate() {
        return onDuplicate;
    }

    /**
     * Sets the {@code idempotency.on-duplicate} property.
     *
     * @param onDuplicate {@code SKIP} or {@code FAIL}; not {@code null} (checked at start-up)
     */
    public void setOnDuplicate(OnDuplicate onDuplicate) {
        this.onDuplicate = onDuplicate;
    }
}
