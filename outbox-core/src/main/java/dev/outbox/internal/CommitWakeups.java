package dev.outbox.internal;

import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The store's commit wake-ups ({@link CommitSignals}) while this instance harvests: subscribed when the harvest
 * starts, told whether wake-ups are needed (not while the harvest reads back to back), closed with the store's own
 * harvest ({@link CursorHarvest#harvestStopped()}) when it stops. An idle pause of the harvest thread ends as soon as a
 * wake-up comes.
 *
 * <p>The harvest thread calls every method but {@link #stop()}, which close may call too once that thread ended; the
 * wake-up itself comes from any thread.
 */
final class CommitWakeups {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    /** The store's commit signals, or null if it has none (the harvest polls). */
    private final CommitSignals signalling;
    /** The store's cursor harvest, told when the harvest stops; or null. */
    private final CursorHarvest reads;
    private final EngineState state;
    private final Duration pollInterval;
    /** Counts the wake-ups; an idle pause ends when it moves. */
    private final AtomicLong signals = new AtomicLong();
    /**
     * Whether the harvest thread is in an idle pause that a wake-up ends: set before it checks {@link #signals}, so
     * that a wake-up either is seen by that check or signals the pause.
     */
    private volatile boolean idlePause;
    /** What the watch was last told ({@link #needed}); a new watch starts needed. Harvest thread. */
    private boolean isNeeded = true;
    private volatile CommitSignals.CommitWatch watch;

    CommitWakeups(String name, Store store, EngineState state, Duration pollInterval) {
        this.name = name;
        this.signalling = store.capability(CommitSignals.class).orElse(null);
        this.reads = store.capability(CursorHarvest.class).orElse(null);
        this.state = state;
        this.pollInterval = pollInterval;
    }

    /** Subscribes, if the store can tell and this instance is not subscribed yet. */
    void start() {
        if (watch != null || signalling == null) {
            return;
        }
        isNeeded = true;
        try {
            watch = signalling.watchCommits(this::signal);
        } catch (RuntimeException e) {
            log.warn("{}: the store's commit wake-ups could not start; polling every {} instead", name,
                    pollInterval, e);
        }
    }

    /**
     * A commit to read: the store's signal, or rows this instance itself put into the outbox (scheduled messages it
     * moved). Any thread.
     */
    void signal() {
        signals.incrementAndGet();
        if (idlePause) {
            state.signalWork(); // else the harvest thread is busy: it reads again anyway
        }
    }

    /** Tells the watch, if any, whether wake-ups are needed (see {@link CommitSignals.CommitWatch#needed}). */
    void needed(boolean needed) {
        CommitSignals.CommitWatch w = watch;
        if (w != null && isNeeded != needed) {
            isNeeded = needed;
            try {
                w.needed(needed);
            } catch (RuntimeException e) {
                log.warn("{}: the store's commit wake-ups failed to change", name, e);
            }
        }
    }

    /** The wake-ups so far: pass it to {@link #arrivedSince} after a read that found nothing. */
    long seen() {
        return signals.get();
    }

    /** Whether a wake-up came since {@code seen} ({@code -1}: not watched, never). */
    boolean arrivedSince(long seen) {
        return seen >= 0 && signals.get() != seen;
    }

    /** The harvest thread enters ({@code true}) or leaves an idle pause that a wake-up ends. */
    void idle(boolean pausing) {
        idlePause = pausing;
    }

    /** Closes the watch and tells the store that this instance no longer harvests it. */
    void stop() {
        CommitSignals.CommitWatch w = watch;
        watch = null;
        if (w != null) {
            try {
                w.close();
            } catch (RuntimeException e) {
                log.warn("{}: the store's commit wake-ups failed to close", name, e);
            }
        }
        if (reads == null) {
            return;
        }
        try {
            reads.harvestStopped();
        } catch (RuntimeException e) {
            log.warn("{}: the store failed to let go of its harvest", name, e);
        }
    }
}
