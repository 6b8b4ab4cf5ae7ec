package dev.outbox;

import java.util.UUID;

/**
 * Receives the dispatcher's events. Every method has a no-op default, so a listener overrides only what it
 * needs. Callbacks run on the dispatcher's own threads: they must return quickly and must not call
 * {@link Dispatcher#close()}. An exception thrown by a callback never disturbs the harvest: it is caught, counted
 * in {@link DispatcherHealth#callbackErrors()}, and logged the first time a callback of its kind throws.
 */
public interface DispatcherListener {

    /**
     * This instance became the leader, with a fresh leader id.
     *
     * @param leaderId the new leader id
     */
    default void leaderAcquired(UUID leaderId) {
    }

    /**
     * The leader took a fresh leader id, to re-mark every unacknowledged record: after a failed mark (the mark may
     * have committed rows it never saw) or a lease that lapsed before a send. A failed delivery does not cause one:
     * it holds only its own key.
     *
     * @param leaderId the fresh leader id
     */
    default void leaderRefreshed(UUID leaderId) {
    }

    /**
     * Leadership ended in an orderly way — handed over to another instance, or given up by
     * {@link Dispatcher#close()} — after in-flight records were drained (within the drain timeout).
     */
    default void leaderRevoked() {
    }

    /**
     * This instance stopped publishing at once because it can no longer be sure it leads (its heartbeats
     * stopped arriving, or its group session was lost). Another instance may take over.
     */
    default void leaderFenced() {
    }

    /**
     * A periodic throughput reading, every {@code metricsInterval}, and a last one when the dispatcher closes.
     *
     * @param reading the counts since the previous reading
     */
    default void meterRead(MeterReading reading) {
    }

    /**
     * A record was parked: it will not be retried until an operator replays it.
     *
     * @param record the parked row's summary
     */
    default void recordParked(ParkedRecord record) {
    }

    /**
     * A store or broker operation failed; the dispatcher backs off and retries. {@code operation} names it
     * ("mark", "purge", "send", …). A purge, park or failure record the store refuses for good (a
     * {@link dev.outbox.spi.StoreException} that is not retriable) is reported once, when the refusal begins, not
     * at every retry: its records are held (see {@link DispatcherHealth#heldRecords()}) until the store accepts it.
     *
     * @param operation what failed, as {@link DispatcherHealth.Failure#operation()} names it
     * @param error     the failure
     */
    default void failure(String operation, Throwable error) {

    }
}
