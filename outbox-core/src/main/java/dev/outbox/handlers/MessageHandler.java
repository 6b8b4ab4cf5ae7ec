package dev.outbox.handlers;

import dev.outbox.OutboxRecord;

/**
 * Handles the records of one topic (or one type) in this process: sends the e-mail, calls the other system, writes
 * elsewhere. Registered with {@link HandlerMessageBroker.Builder#handler} or {@link HandlerMessageBroker.Builder#typeHandler}.
 *
 * <p><b>Handlers must be idempotent.</b> Delivery is at least once: a record whose handler returned may run again if
 * the leader dies (or loses its leadership) before the record's removal committed, or if the handler outlived its
 * timeout — as many records as were in flight at that moment, never more (G4). Use
 * {@link OutboxRecord#messageId()} (stable through retries, park and replay) to recognise a repeat.
 *
 * <p>How the outcome is read: returning normally acknowledges the record (it is removed from the outbox); throwing
 * {@link PermanentFailureException} parks it at once; throwing a {@link dev.outbox.spi.DeliveryException} passes its
 * kind on as it is (an outage when the system the handler calls is down for every record); any other exception is
 * a retriable failure: the record is retried after a backoff that grows with its attempts, holding only its own
 * key, and parked after {@code maxAttempts} failures. Records of one key are handled one at a time, in the order
 * they were written.
 *
 * <p>Called on one of the broker's handler threads, never on two threads at once for one key; a handler serving
 * several keys must be thread-safe. It may declare checked exceptions (an HTTP client's {@code IOException}, for
 * one): they are failures like any other.
 *
 * @param <T> the payload's type
 */
@FunctionalInterface
public interface MessageHandler<T> {

    /**
     * Handles one record.
     *
     * @param payload the record's value decoded as the registered type; null for a tombstone (a record without a
     *                value)
     * @param record  the record itself: key, headers, id, message id, attempts so far
     * @throws Exception to fail the record; see the class comment for how each kind is treated
     */
    void handle(T payload, OutboxRecord record) throws Exception;
}
