package dev.outbox.internal;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Supplier;

/**
 * The engine's scheduling state and the one lock that guards it: the {@link Leadership}, the per-key
 * {@link KeySchedule}, the cursor harvest's {@link HarvestCursor} (null when harvesting by mark) and the count of
 * records held by a refused store write. Every transition that touches more than one of them is a method here, so
 * that the harvest is rewound in exactly one place: whenever leadership changes (acquired, stopped, a fresh leader
 * id, a lost epoch) or a failed mark or a lapsed lease makes the schedule doubt the table.
 *
 * <p>The threads stay outside: the harvest, settle and leader threads call in, and wait here for work
 * ({@link #awaitWork}) or for flight to drain ({@link #awaitDrained}). A caller that needs several reads to agree
 * takes {@link #lock} itself; the fields' owners are documented as "guarded by the lock".
 */
final class EngineState {
    final Lock lock;
    /** Signalled whenever the harvest thread may have something to do. */
    private final Condition work;
    /** Signalled whenever a record leaves flight. */
    private final Condition drained;
    private final EngineRuntime runtime;

    // --- guarded by lock
    final Leadership leadership = new Leadership();
    final KeySchedule schedule;
    /** Parked records' sequence numbers waiting for a carrier ({@code MOVE_ON}); thread-safe on its own. */
    final SkippedSequences skipped = new SkippedSequences();
    /** The cursor harvest's position and gaps; null when harvesting by mark. */
    final HarvestCursor cursor;
    /** Records held by a store write refused for good; they stay in flight until it succeeds. */
    private int heldRecords;
    // ---

    /** Whether this instance leads: a copy of {@link Leadership#leading()} readable without the lock. */
    private volatile boolean leading;
    /** How many leaderships this instance acquired; readable without the lock. */
    private volatile int terms;

    EngineState(EngineRuntime runtime, KeySchedule schedule, HarvestCursor cursor) {
        this.runtime = runtime;
        this.lock = runtime.newLock();
        this.work = lock.newCondition();
        this.drained = lock.newCondition();
        this.schedule = schedule;
        this.cursor = cursor;
    }

    // ------------------------------------------------------------------------------------------ transitions

    /** A new leadership under {@code id}: the schedule starts, the harvest reads from the head. */
    void acquired(UUID id) {
        lock.lock();
        try {
            leadership.acquired(id);
            terms++;
            schedule.start();
            skipped.clear();
            rewindCursor();
            leading = true;
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Leadership ended: every queued record is forgotten and the harvest will read from the head.
     *
     * @return whether this instance was leading
     */
    boolean stopped() {
        lock.lock();
        try {
            boolean was = leadership.stopped();
            leading = false;
            schedule.stop();
            skipped.clear();
            rewindCursor();
            work.signalAll();
            return was;
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds the lock. A fresh leader id: every unacknowledged row will be marked again. */
    void refreshed(UUID fresh) {
        leadership.refreshed(fresh);
        schedule.abandon();
        rewindCursor();
    }

    /**
     * A write or send was refused as fenced: what is queued is forgotten, the harvest rewinds and the harvest thread
     * is woken to stand down.
     *
     * @return whether the epoch was held until now
     */
    boolean epochLost(boolean byBroker) {
        lock.lock();
        try {
            boolean first = leadership.lost(byBroker);
            schedule.abandon();
            rewindCursor();
            work.signalAll();
            return first;
        } finally {
            lock.unlock();
        }
    }

    /** The stand-down after a lost epoch ended. */
    void epochRegained() {
        lock.lock();
        try {
            leadership.regained();
        } finally {
            lock.unlock();
        }
    }

    /** A failed mark or a lapsed lease: forget what is queued and take a fresh leader id before marking again. */
    void remark() {
        lock.lock();
        try {
            leadership.remark();
            schedule.abandon();
            rewindCursor();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Caller holds the lock. Held keys were released ({@code HOLD_KEY}): their records were dropped while held, so
     * the harvest reads again from the head (marking: under a fresh leader id).
     */
    void released() {
        schedule.abandon();
        if (cursor != null) {
            rewindCursor();
        } else {
            leadership.remark();
        }
        work.signalAll();
    }

    /** Caller holds the lock. What was queued was forgotten: the cursor harvest reads again from the head. */
    private void rewindCursor() {
        if (cursor != null) {
            cursor.rewind();
        }
    }

    /** Caller holds the lock. The count of records held by refused writes changed; flight may have drained. */
    void settled(int held) {
        heldRecords = held;
        work.signalAll();
        drained.signalAll();
    }

    /** Caller holds the lock. Records left flight without being sent. */
    void unsent() {
        drained.signalAll();
        work.signalAll();
    }

    // ------------------------------------------------------------------------------------------ reads

    /** How many leaderships this instance acquired so far: a new value means a new term began. */
    int terms() {
        return terms;
    }

    boolean leading() {
        return leading;
    }

    <T> T read(Supplier<T> read) {
        lock.lock();
        try {
            return read.get();
        } finally {
            lock.unlock();
        }
    }

    UUID leaderId() {
        return read(leadership::leaderId);
    }

    int inFlight() {
        return read(schedule::inFlight);
    }

    int heldKeys() {
        return read(schedule::heldKeys);
    }

    int heldRecords() {
        return read(() -> heldRecords);
    }

    /** Caller holds the lock. Records in flight that wait for the broker, not for a refused write to succeed. */
    int underway() {
        return schedule.inFlight() - heldRecords;
    }

    // ------------------------------------------------------------------------------------------ waits

    /** Wakes the harvest thread. */
    void signalWork() {
        lock.lock();
        try {
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Caller holds the lock. Waits at most {@code max} for work.
     *
     * @return false if interrupted (the interrupt status is set again)
     */
    boolean awaitWork(Duration max) {
        return awaitWorkNanos(max.toNanos());
    }

    /** Caller holds the lock. As {@link #awaitWork}, in nanoseconds. */
    boolean awaitWorkNanos(long nanos) {
        try {
            work.awaitNanos(nanos);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Waits until nothing is in flight but records held by a refused write (they wait for a human, not for the
     * broker), or the deadline passes.
     *
     * @return whether flight drained
     */
    boolean awaitDrained(long deadlineNanos) {
        lock.lock();
        try {
            while (underway() > 0) {
                long left = deadlineNanos - runtime.nanoTime();
                if (left <= 0) {
                    return false;
                }
                drained.awaitNanos(left);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return underway() <= 0;
        } finally {
            lock.unlock();
        }
    }

    /** The state for the deterministic simulation's hashing; see {@link DefaultDispatcher#simulationState()}. */
    @Override
    public String toString() {
        return leadership + "/" + schedule + "/" + cursor;
    }
}
