package dev.outbox.handlers;

import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;

/**
 * Called once a record was parked (its handler failed {@code maxAttempts} times, or failed permanently, or no handler
 * took it): to alert someone, compensate, or record the failure where the business sees it. The parked row stays in
 * the store's parked area either way, where an operator replays or discards it.
 *
 * <p>Runs on the leader that parked the record, after the park committed, on one of the broker's handler threads;
 * at most once per park: an exception is logged and not retried, and a leader that dies between the park and the
 * call never makes it (the parked table stays the truth). Must be thread-safe.
 *
 * @param <T> the payload's type
 */
@FunctionalInterface
public interface FallbackHandler<T> {

    /**
     * Reacts to a parked record.
     *
     * @param payload the record's value decoded as the registered type; null for a tombstone, for a value that could
     *                not be decoded (which may be why it was parked), or when the record itself is not known here
     * @param record  the record as this process last tried it, or null when it parked a record it never tried (a
     *                row the store could not read as a message)
     * @param parked  the parked row: id, topic, key, attempts, and the reason
     * @throws Exception logged, nothing more: the record is parked either way
     */
    void parked(T payload, OutboxRecord record, ParkedRecord parked) throws Exception;
}
