package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.Store;

import java.time.Duration;
import java.util.Deque;
import java.util.List;
import java.util.function.Supplier;

/**
 * The orderings of the harvest protocol that the guarantees rest on, in one place: where a failed record goes back
 * in its key's queue, which ids a cursor read looks at again, how long a revoked leader waits for its records in
 * flight, what happens to a row between its send and its acknowledgement, and whether a settled batch is written to
 * the store before its keys move on. The engine takes them from its {@link EngineRuntime#protocolOrder() runtime}
 * once and always calls them; production runtimes give {@link #STANDARD}, whose methods are the protocol.
 *
 * <p>This is the one seam through which the test kit's deterministic simulation plants the bugs it must find:
 * its runtime may give an order that breaks one rule (a retry queued behind its key's later records, a purge before
 * the acknowledgement, ...), and the simulation proves that its checkers catch each break. The engine itself
 * never asks whether a bug is planted.
 *
 * <p>Not part of the public API: it may change in any release. Implementations must be stateless and
 * thread-safe.
 */
public interface ProtocolOrder {

    /** The protocol itself: every method's default. */
    ProtocolOrder STANDARD = new ProtocolOrder() {
        @Override
        public String toString() {
            return "standard";
        }
    };

    /**
     * Puts a record whose delivery failed back into its key's queue. The protocol: at the head, so that the key's
     * later records wait for it (per-key order).
     *
     * @param keyQueue the key's queued records, oldest first
     * @param failed   the record to queue again
     */
    default void requeue(Deque<OutboxRecord> keyQueue, OutboxRecord failed) {
        keyQueue.addFirst(failed);
    }

    /**
     * The ranges of ids below the cursor that a read must look at again, because their transactions may still
     * have been open when the cursor passed them. The protocol: all of them (no record left behind).
     *
     * @param open the ranges the cursor keeps open
     * @return the ranges to read again
     */
    default List<IdRange> recheck(List<IdRange> open) {
        return open;
    }

    /**
     * How long a revoked leader waits for its records in flight before it lets leadership go. The protocol: the
     * configured drain timeout, so that a successor does not send a key's record while its predecessor's is in
     * flight.
     *
     * @param drainTimeout the configured {@code drainTimeout}
     * @return how long to wait
     */
    default Duration handoverDrain(Duration drainTimeout) {
        return drainTimeout;
    }

    /**
     * Called right after a record was handed to the broker, before its acknowledgement. The protocol: nothing;
     * a row is purged only once the broker acknowledged it (no loss).
     *
     * @param store  the dispatcher's store
     * @param record the record sent
     */
    default void sent(Store store, OutboxRecord record) {
    }

    /**
     * Settles a batch of completions in two steps. The protocol: the store's writes (purges, failures, parks)
     * commit first, and only then do the batch's keys move on, so that the table and the schedule agree.
     *
     * @param write   writes the batch's verdicts to the store
     * @param release lowers the batch's keys' barriers; returns what it settled
     * @param <T>     what {@code release} returns
     * @return what {@code release} returned
     */
    default <T> T settle(Runnable write, Supplier<T> release) {
        write.run();
        return release.get();
    }
}
