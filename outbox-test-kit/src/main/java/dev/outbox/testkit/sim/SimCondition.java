package dev.outbox.testkit.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * A condition of a {@link SimLock}: a wait releases the lock and blocks the worker until a signal, an interrupt or its
 * deadline in virtual time, then takes the lock again. Used only by the worker holding the scheduler's baton.
 */
final class SimCondition implements Condition, SimScheduler.Waitable {
    private final SimScheduler sched;
    private final SimLock lock;
    private final List<SimScheduler.Task> waiters = new ArrayList<>();

    /** A condition of {@code lock}, whose waits are {@code sched}'s blocking points. */
    SimCondition(SimScheduler sched, SimLock lock) {
        this.sched = sched;
        this.lock = lock;
    }

    @Override
    public long awaitNanos(long nanos) throws InterruptedException {
        SimScheduler.Task me = sched.self();
        if (me == null || lock.owner != me) {
            throw new IllegalMonitorStateException("await without holding the lock");
        }
        sched.takeInterrupt(me);
        if (nanos <= 0) {
            return nanos;
        }
        int count = lock.holds;
        long deadline = sched.deadlineAfter(nanos);
        lock.release();
        waiters.add(me);
        try {
            sched.block(me, this, "await", deadline);
        } finally {
            waiters.remove(me);
            if (!sched.killing()) {
                lock.reacquire(me, count);
            } else if (lock.owner == null) {
                lock.owner = me;
                lock.holds = count;
            }
        }
        sched.takeInterrupt(me);
        return deadline == SimScheduler.NONE ? Long.MAX_VALUE : deadline - sched.now();
    }

    @Override
    public void forget(SimScheduler.Task t) {
        waiters.remove(t);
    }

    @Override
    public void await() throws InterruptedException {
        awaitNanos(SimScheduler.NONE);
    }

    @Override
    public void awaitUninterruptibly() {
        try {
            await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean await(long time, TimeUnit unit) throws InterruptedException {
        return awaitNanos(unit.toNanos(time)) > 0;
    }

    @Override
    public boolean awaitUntil(java.util.Date deadline) throws InterruptedException {
        return awaitNanos(TimeUnit.MILLISECONDS.toNanos(deadline.getTime() - sched.clock().millis())) > 0;
    }

    @Override
    public void signal() {
        if (!waiters.isEmpty()) {
            sched.wakeUp(waiters.get(0));
        }
    }

    @Override
    public void signalAll() {
        for (SimScheduler.Task t : new ArrayList<>(waiters)) {
            sched.wakeUp(t);
        }
    }
}
