package dev.outbox.internal;

import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.StoreFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What the engine does when a successor fenced this instance out: a store write refused as fenced
 * ({@link StoreFencedException}) or a send refused by a fenced broker ({@link DeliveryException#isFenced()}). Either
 * way the epoch is lost ({@link EngineState#epochLost}): what was queued is forgotten, the harvest rewinds, and the
 * harvest thread stands down before it takes a new database epoch (fencing store) or asks the broker again.
 * Counts and reports each refusal.
 *
 * <p>Thread-safe.
 */
final class Fences {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    private final EngineState state;
    private final StoreWrites writes;
    private final EngineEvents events;
    /** Store writes refused as fenced, since the start. */
    private final AtomicLong fencedWrites = new AtomicLong();
    /** Records whose send the broker refused as fenced, since the start. */
    private final AtomicLong fencedSends = new AtomicLong();

    Fences(String name, EngineState state, StoreWrites writes, EngineEvents events) {
        this.name = name;
        this.state = state;
        this.writes = writes;
        this.events = events;
    }

    /**
     * A store write was refused as fenced: another dispatcher took the outbox's epoch since this one did. A refusal
     * of a write begun under an epoch this instance has since replaced is only counted.
     */
    void byStore(String operation, StoreFencedException e) {
        long n = fencedWrites.incrementAndGet();
        events.failure(operation, e);
        if (e.epoch() != writes.takenEpoch()) {
            log.info("{}: the database refused a {} of an earlier epoch of this instance ({} refused so far)", name,
                    operation, n);
            return;
        }
        if (state.epochLost(false)) {
            log.warn("{}: the database refused a {} ({} writes refused so far): {}; standing down, then taking a new"
                    + " epoch if this instance still leads", name, operation, n, e.getMessage());
        } else {
            log.info("{}: the database refused a {} of an earlier epoch ({} refused so far)", name, operation, n);
        }
    }

    /**
     * The broker refused {@code records} sends as fenced (e.g. Kafka's transactional producer, after a successor
     * initialised it): the harvest thread stands down before it sends again (the broker then asks for the sender
     * back: a deposed leader's election soon says it no longer leads); with a fencing store, it also takes a new
     * epoch after the stand-down.
     */
    void byBroker(int records, DeliveryException e) {
        long n = fencedSends.addAndGet(records);
        events.failure("send", e);
        if (state.epochLost(true)) {
            log.warn("{}: the broker refused {} send(s) as fenced ({} so far): {}; standing down before sending again",
                    name, records, n, e.getMessage());
        } else {
            log.info("{}: the broker refused {} more send(s) as fenced ({} so far)", name, records, n);
        }
    }
}
