package dev.outbox.testkit.sim;

import dev.outbox.OutboxRecord;
import dev.outbox.internal.ProtocolOrder;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.Store;

import java.time.Duration;
import java.util.Deque;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Bugs the simulation plants in the engine to prove that it finds them ({@link SimulationBuilder#plant}). Each
 * breaks one rule of the engine's {@link ProtocolOrder}, the one seam through which the simulation's runtime
 * changes the engine: the engine has no branch of its own for any of them. Test tooling, not API.
 */
public enum PlantedBug {
    /** Purge a record's row as soon as it is sent, before the broker acknowledged it. */
    PURGE_BEFORE_ACK,
    /** Lower a key's barrier (let its next record go) before the acknowledged record's purge committed. */
    BARRIER_BEFORE_PURGE,
    /** Let the cursor pass an id whose transaction is still open, never rechecking it. */
    CURSOR_SKIPS_OPEN,
    /** Hand leadership over without waiting for the records in flight (no flush). */
    NO_FLUSH_ON_HANDOVER,
    /** Queue a failed record behind its key's later records instead of at its head. */
    RETRY_OVERTAKES_HEAD;

    /**
     * The protocol's order with {@code bugs} planted: the standard order where none of them applies.
     *
     * @param bugs the bugs to plant
     * @return the order the simulation's runtime gives the engine
     */
    static ProtocolOrder order(Set<PlantedBug> bugs) {
        if (bugs.isEmpty()) {
            return ProtocolOrder.STANDARD;
        }
        Set<PlantedBug> planted = EnumSet.copyOf(bugs);
        return new ProtocolOrder() {
            @Override
            public void requeue(Deque<OutboxRecord> keyQueue, OutboxRecord failed) {
                if (planted.contains(RETRY_OVERTAKES_HEAD)) {
                    keyQueue.addLast(failed);
                } else {
                    ProtocolOrder.super.requeue(keyQueue, failed);
                }
            }

            @Override
            public List<IdRange> recheck(List<IdRange> open) {
                return planted.contains(CURSOR_SKIPS_OPEN) ? List.of() : open;
            }

            @Override
            public Duration handoverDrain(Duration drainTimeout) {
                return planted.contains(NO_FLUSH_ON_HANDOVER) ? Duration.ZERO : drainTimeout;
            }

            @Override
            public void sent(Store store, OutboxRecord record) {
                if (planted.contains(PURGE_BEFORE_ACK)) {
                    try {
                        store.purge(List.of(record.id()));
                    } catch (RuntimeException e) {
                        // the planted purge is best effort, as a buggy engine's would be
                    }
                }
            }

            @Override
            public <T> T settle(Runnable write, Supplier<T> release) {
                if (!planted.contains(BARRIER_BEFORE_PURGE)) {
                    return ProtocolOrder.super.settle(write, release);
                }
                T settled = release.get();
                write.run();
                return settled;
            }

            @Override
            public String toString() {
                return "planted " + planted;
            }
        };
    }
}
