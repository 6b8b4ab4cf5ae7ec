package dev.outbox.internal;

import dev.outbox.spi.IdempotencyKeys;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * The leader's store work beside the harvest, on a thread of its own ({@code <name>-housekeeping}), started only for a
 * store that needs it: moving due scheduled messages into the outbox ({@link ScheduledMessages}) and deleting expired
 * idempotency keys ({@link IdempotencyKeys}). Only the leader does it (a standby would only add load); a deposed
 * leader that does it once more is harmless, as both operations are safe for concurrent callers.
 *
 * <p>The release runs again at once while a call moves a full batch, else when the next message is due and at least
 * every {@code pollInterval} (a message written meanwhile may be due sooner): a due message reaches the outbox within
 * one poll interval of its time, then goes out as any row does. The sweep runs every {@link #SWEEP_INTERVAL}, again at
 * once while it deletes full batches. A failed call is logged and tried again after {@code errorBackoff}.
 *
 * <p>Not thread-safe: {@link #run()} is the body of one thread, {@link #stop()} may be called from any.
 */
final class StoreHousekeeping implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);
    /** The most messages one release moves, and the most keys one sweep deletes. */
    static final int BATCH = 500;
    /** How often expired idempotency keys are deleted. */
    static final Duration SWEEP_INTERVAL = Duration.ofMinutes(1);

    private final String name;
    private final ScheduledMessages scheduled;
    private final IdempotencyKeys keys;
    private final EngineRuntime runtime;
    private final Latch stopped;
    private final Duration pollInterval;
    private final Duration errorBackoff;
    private final BooleanSupplier leading;
    private final Runnable rowsAdded;
    private final BiConsumer<String, RuntimeException> onFailure;
    private long nextSweepNanos;

    /**
     * @param rowsAdded told after messages were moved into the outbox (the harvest reads at once)
     * @param onFailure told of a failed call: what failed ("release", "sweep") and why
     */
    StoreHousekeeping(String name, Store store, EngineRuntime runtime, Duration pollInterval, Duration errorBackoff,
                      BooleanSupplier leading, Runnable rowsAdded, BiConsumer<String, RuntimeException> onFailure) {
        this.name = name;
        this.scheduled = store.capability(ScheduledMessages.class).orElse(null);
        this.keys = store.capability(IdempotencyKeys.class).orElse(null);
        this.runtime = runtime;
        this.stopped = new Latch(runtime);
        this.pollInterval = pollInterval;
        this.errorBackoff = errorBackoff;
        this.leading = leading;
        this.rowsAdded = rowsAdded;
        this.onFailure = onFailure;
    }

    /** Whether {@code store} has anything for this to do: else the dispatcher starts no thread for it. */
    static boolean needed(Store store) {
        return store.capability(ScheduledMessages.class).isPresent()
                || store.capability(IdempotencyKeys.class).isPresent();
    }

    @Override
    public void run() {
        nextSweepNanos = runtime.nanoTime();
        Duration wait = Duration.ZERO;
        try {
            while (!stopped.await(wait.toNanos())) {
                wait = leading.getAsBoolean() ? once() : pollInterval;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * One round: a release and, when due, a sweep.
     *
     * @return how long to wait before the next round
     */
    Duration once() {
        Duration wait = pollInterval;
        if (scheduled != null) {
            wait = release();
        }
        if (keys != null && runtime.nanoTime() - nextSweepNanos >= 0) {
            Duration sweepWait = sweep();
            wait = sweepWait.compareTo(wait) < 0 ? sweepWait : wait;
        }
        return wait;
    }

    private Duration release() {
        ScheduledMessages.Release r;
        try {
            r = scheduled.releaseDue(BATCH);
        } catch (RuntimeException e) {
            onFailure.accept("release", e);
            return errorBackoff;
        }
        if (r.moved() > 0) {
            log.debug("{}: moved {} due scheduled message(s) into the outbox", name, r.moved());
            rowsAdded.run();
        }
        if (r.moved() >= BATCH) {
            return Duration.ZERO;
        }
        return r.nextDue() != null && r.nextDue().compareTo(pollInterval) < 0 ? r.nextDue() : pollInterval;
    }

    private Duration sweep() {
        int deleted;
        try {
            deleted = keys.deleteExpired(BATCH);
        } catch (RuntimeException e) {
            onFailure.accept("sweep", e);
            nextSweepNanos = runtime.nanoTime() + errorBackoff.toNanos();
            return errorBackoff;
        }
        if (deleted > 0) {
            log.debug("{}: deleted {} expired idempotency key(s)", name, deleted);
        }
        boolean more = deleted >= BATCH;
        nextSweepNanos = runtime.nanoTime() + (more ? 0 : SWEEP_INTERVAL.toNanos());
        return more ? Duration.ZERO : SWEEP_INTERVAL;
    }

    void stop() {
        stopped.open();
    }
}
