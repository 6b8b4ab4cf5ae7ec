package dev.outbox;

import java.time.Duration;

/**
 * Measurements of a {@link Dispatcher}'s engine, for metrics and tracing adapters (such as
 * {@code dev.outbox.micrometer.OutboxMetrics}): durations and sizes of marks and purges, per-record send,
 * acknowledgement and failure, a periodic {@linkplain #sampled sample} of the outbox (backlog, parked rows, lag)
 * taken by the leader, and changes of its {@linkplain #statusChanged status} (leader, standby, fenced, closed). Where {@link DispatcherListener} reports what happened, an observer measures it.
 *
 * <p>Register with {@link Dispatcher.Builder#observer} or, at any time, {@link Dispatcher#addObserver}. Every
 * method has a no-op default. Callbacks run on the dispatcher's own threads, some once per record: they must
 * be cheap, must not block, and must be thread-safe (different callbacks arrive on different threads). An
 * exception thrown by a callback never disturbs the harvest: it is caught, logged once per kind of callback,
 * and counted in {@link DispatcherHealth#callbackErrors()}.
 */
public interface DispatcherObserver {

    /**
     * A mark completed (on the mark thread).
     *
     * @param rows     rows marked, readable or not; 0 when the outbox had nothing to mark
     * @param duration how long the store call took
     */
    default void marked(int rows, Duration duration) {
    }

    /**
     * A purge of acknowledged rows committed (on the purge thread).
     *
     * @param rows     rows deleted by the call
     * @param duration how long the store call took, including retries after failures
     */
    default void purged(int rows, Duration duration) {
    }

    /**
     * A record was handed to the broker (on the mark thread).
     *
     * @param record the record sent
     */
    default void sent(OutboxRecord record) {
    }

    /**
     * The broker acknowledged a record and its row was purged (on the purge thread).
     *
     * @param record      the record
     * @param sendToAck   from the hand-over to the broker to the broker's acknowledgement
     * @param commitToAck from the row's {@linkplain OutboxRecord#createdAt() creation time} to the
     *                    acknowledgement, measured with the dispatcher's clock (a clock skew between the database
     *                    and this host shifts it; never negative)
     */
    default void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
    }

    /**
     * A latest-only record ({@link OutboxMessage#isLatestOnly()}) was purged without a send, because a newer record
     * of its topic and key was queued behind it (on the purge thread, once its row was purged).
     *
     * @param record  the record not sent
     * @param newerId the id of the newer record of its topic and key that made it worthless
     */
    default void superseded(OutboxRecord record, long newerId) {
    }

    /**
     * A parked latest-only record was discarded from the parked area because a newer record of its topic and key was
     * delivered after it was parked (on the purge thread, once the newer record's row was purged and the parked row
     * discarded; {@link DispatcherConfig.SupersededParked#DISCARD}). Replaying it would have sent the old value after
     * the newer one.
     *
     * @param record  the parked record discarded
     * @param newerId the id of the delivered record of its topic and key that made it worthless
     */
    default void parkedSuperseded(ParkedRecord record, long newerId) {
    }

    /**
     * A delivery failed (on the purge thread); the record will be retried, or parked if this was its last
     * attempt or the failure is permanent (then {@link #parked} follows).
     *
     * @param record the record whose delivery failed, with the attempts before this failure
     * @param error  the failure, often a {@link dev.outbox.spi.DeliveryException}
     */
    default void failed(OutboxRecord record, Throwable error) {
    }

    /**
     * A record was parked: after failed deliveries, or because its row could not be read as a message.
     *
     * @param record the parked row's summary
     */
    default void parked(ParkedRecord record) {
    }

    /**
     * A periodic sample of the outbox, taken by the leader only, every {@code metricsInterval}
     * ({@link DispatcherConfig#metricsInterval()}), on a thread of its own: a slow query never delays a
     * heartbeat or a mark. A scrape never causes a query.
     *
     * @param sample the sample
     */
    default void sampled(OutboxSample sample) {
    }

    /**
     * The dispatcher's {@linkplain DispatcherHealth#status() health status} changed: it became the leader, a
     * standby, was fenced, or closed. Reported by the leader thread within one {@code pollInterval} of the change
     * (the last one, {@link DispatcherHealth.Status#CLOSED}, by the thread that closed the dispatcher); a change
     * that is undone within one poll interval may go unreported.
     *
     * @param status the new status
     */
    default void statusChanged(DispatcherHealth.Status status) {

    }
}
