package dev.outbox.internal;

import dev.outbox.ParkedRecord;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * Where the harvest's rows come from, chosen once from the configuration and what the store can do: a cursor read
 * ({@link CursorSource}, which also serves a store fed by a stream whose read waits) or a mark ({@link MarkSource}).
 * Either way the rows go behind their keys in the {@link KeySchedule} and unreadable rows are parked; the harvest
 * thread ({@link HarvestLoop}) calls it and does not branch on which it is.
 *
 * <p>Harvest thread only.
 */
abstract class HarvestSource {
    static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    final Parts parts;

    /** What a source works with; one per engine. */
    record Parts(String name, EngineRuntime runtime, Store store, EngineState state, StoreWrites writes,
                 Fences fences, EngineEvents events, boolean holdKeys, Latch stopped, Consumer<Duration> pause) {
    }

    /** The log lines of this source's failing reads or marks, bounded through an outage. */
    final OutageLog outage;

    HarvestSource(Parts parts, String operation) {
        this.parts = parts;
        this.outage = new OutageLog(log, parts.name(), operation, parts.runtime());
    }

    /**
     * Reads or marks up to {@code room} rows (a mark: at most {@code markLimit}) for the leader {@code markAs} in
     * the engine's epoch {@code markEpoch}, and queues them behind their keys unless that epoch ended meanwhile. A
     * failure is reported, backed off and answered with -1.
     *
     * @return the rows read, or -1 if the read failed
     */
    abstract int harvest(UUID markAs, int room, int markLimit, long markEpoch, Backoff.Sequence failures);

    /** Whether the last {@link #harvest} returned as many rows as it asked for: more may be waiting. */
    abstract boolean lastFull();

    /** The harvest caught up (it read less than its room): a cursor rescans from the head now and then. */
    void caughtUp(long nowNanos) {
    }

    /**
     * Whether the read waits for rows when none is ready ({@link dev.outbox.spi.CursorHarvest#readWaits()}): the
     * harvest then reads again straight after an empty read. False for a mark.
     */
    boolean waits() {
        return false;
    }

    /** Ends a read that failed: the schedule may take reads' results again. */
    final void readEnded() {
        EngineState state = parts.state();
        state.lock.lock();
        try {
            state.schedule.readEnded();
        } finally {
            state.lock.unlock();
        }
    }

    /**
     * Parks rows that cannot be read as messages. Rows the store refuses to park stay in the table, unheld: the next
     * rescan (or, marking, the next leader id) tries again.
     */
    final void parkRejected(List<MarkResult.Rejected> rejected) {
        Map<Long, String> reasons = new LinkedHashMap<>();
        for (MarkResult.Rejected r : rejected) {
            reasons.put(r.id(), Excerpt.of(r.reason(), Excerpt.MAX_REASON_LENGTH));
        }
        StoreWrites writes = parts.writes();
        StoreWrites.Outcome outcome = writes.write("park", "park unreadable", reasons, m -> writes.writes().park(m),
                parts.stopped());
        if (outcome.fenced() != null) {
            parts.fences().byStore("park", outcome.fenced());
            return;
        }
        if (outcome.stopped()) {
            return;
        }
        if (outcome.refused().isEmpty() && writes.works("park unreadable")) {
            log.info("{}: parking unreadable rows works again", parts.name());
        }
        Instant now = parts.runtime().clock().instant();
        if (parts.holdKeys()) {
            EngineState state = parts.state();
            state.lock.lock();
            try {
                for (MarkResult.Rejected r : rejected) {
                    if (!outcome.refused().contains(r.id()) && r.key() != null) {
                        state.schedule.hold(r.key());
                    }
                }
            } finally {
                state.lock.unlock();
            }
        }
        for (MarkResult.Rejected r : rejected) {
            if (!outcome.refused().contains(r.id())) {
                parts.events().parked(new ParkedRecord(r.id(), r.topic(), r.key(), r.attempts(), reasons.get(r.id()),
                        now));
            }
        }
    }
}
