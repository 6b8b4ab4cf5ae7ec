package dev.outbox.internal;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A one-shot gate, as a {@link java.util.concurrent.CountDownLatch} of one, built on an {@link EngineRuntime}'s
 * lock so that its timed waits run on the runtime's clock. Thread-safe.
 */
final class Latch {
    private final Lock lock;
    private final Condition opened;
    private boolean open;

    Latch(EngineRuntime runtime) {
        this.lock = runtime.newLock();
        this.opened = lock.newCondition();
    }

    void open() {
        lock.lock();
        try {
            open = true;
            opened.signalAll();
        } finally {
            lock.unlock();
        }
    }

    boolean isOpen() {
        lock.lock();
        try {
            return open;
        } finally {
            lock.unlock();
        }
    }

    /** Waits until open. */
    void await() throws InterruptedException {
        lock.lock();
        try {
            while (!open) {
                opened.await();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits at most {@code nanos} until open.
     *
     * @return whether it is open
     */
    boolean await(long nanos) throws InterruptedException {
        lock.lock();
        try {
            long left = nanos;
            while (!open) {
                if (left <= 0) {
                    return false;
                }
                left = opened.awaitNanos(left);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }
}
