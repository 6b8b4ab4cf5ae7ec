package dev.outbox.testkit.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link SimScheduler}'s reentrant lock: taking it is a point where the scheduler may let another worker run, a
 * worker that finds it held blocks until it is released, and a thread outside the run (after it) takes it without
 * ordering. Used only by the worker holding the scheduler's baton.
 */
final class SimLock implements Lock, SimScheduler.Waitable {
    private final SimScheduler sched;
    /** The worker holding the lock, or null; read and set by {@link SimCondition} around a wait. */
    SimScheduler.Task owner;
    /** How many times {@link #owner} holds it. */
    int holds;
    private final List<SimScheduler.Task> waiters = new ArrayList<>();

    /** A lock of {@code sched}'s workers; from {@link SimScheduler#newLock()}. */
    SimLock(SimScheduler sched) {
        this.sched = sched;
    }

    @Override
    public void lock() {
        SimScheduler.Task me = sched.self();
        if (me == null) {
            if (owner != null) {
                throw new IllegalStateException("a lock of the simulation is held by " + owner);
            }
            return; // a thread outside the run, after it: nothing to order against
        }
        if (owner == me) {
            holds++;
            return;
        }
        if (sched.killing()) {
            if (owner != null) {
                throw new SimScheduler.Killed();
            }
        } else {
            sched.reschedule(me);
            while (owner != null) {
                waiters.add(me);
                sched.block(me, this, "lock", SimScheduler.NONE);
            }
        }
        owner = me;
        holds = 1;
    }

    @Override
    public void unlock() {
        SimScheduler.Task me = sched.self();
        if (me == null || owner == null) {
            return;
        }
        if (owner != me) {
            throw new IllegalMonitorStateException("unlock by " + me + ", owner " + owner);
        }
        if (--holds == 0) {
            release();
        }
    }

    void release() {
        owner = null;
        holds = 0;
        for (SimScheduler.Task t : new ArrayList<>(waiters)) {
            sched.wakeUp(t);
        }
        waiters.clear();
    }

    void reacquire(SimScheduler.Task me, int count) {
        while (owner != null && owner != me) {
            if (sched.killing()) {
                throw new SimScheduler.Killed();
            }
            waiters.add(me);
            sched.block(me, this, "relock", SimScheduler.NONE);
        }
        owner = me;
        holds = count;
    }

    @Override
    public void forget(SimScheduler.Task t) {
        waiters.remove(t);
    }

    @Override
    public void lockInterruptibly() {
        lock();
    }

    @Override
    public boolean tryLock() {
        SimScheduler.Task me = sched.self();
        if (owner != null && owner != me) {
            return false;
        }
        lock();
        return true;
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) {
        return tryLock();
    }

    @Override
    public Condition newCondition() {
        return new SimCondition(sched, this);
    }
}
