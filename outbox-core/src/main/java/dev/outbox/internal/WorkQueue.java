package dev.outbox.internal;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * An unbounded queue with a timed take, as the part of {@link java.util.concurrent.LinkedBlockingQueue} the
 * engine uses, built on an {@link EngineRuntime}'s lock. Thread-safe.
 */
final class WorkQueue<T> {
    private final Lock lock;
    private final Condition notEmpty;
    private final ArrayDeque<T> items = new ArrayDeque<>();

    WorkQueue(EngineRuntime runtime) {
        this.lock = runtime.newLock();
        this.notEmpty = lock.newCondition();
    }

    void add(T item) {
        lock.lock();
        try {
            items.add(item);
            notEmpty.signal();
        } finally {
            lock.unlock();
        }
    }

    /** The head, waiting at most {@code nanos} for one; null if none came. */
    T poll(long nanos) throws InterruptedException {
        lock.lock();
        try {
            long left = nanos;
            while (items.isEmpty()) {
                if (left <= 0) {
                    return null;
                }
                left = notEmpty.awaitNanos(left);
            }
            return items.poll();
        } finally {
            lock.unlock();
        }
    }

    /** Moves at most {@code max} items to {@code to}, without waiting. */
    int drainTo(Collection<? super T> to, int max) {
        lock.lock();
        try {
            int n = 0;
            while (n < max && !items.isEmpty()) {
                to.add(items.poll());
                n++;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }
}
