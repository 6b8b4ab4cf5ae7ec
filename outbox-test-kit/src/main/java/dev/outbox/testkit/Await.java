package dev.outbox.testkit;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition in a test without sleeping for a fixed time: polls every millisecond or so until the
 * condition holds or a deadline passes. The project's one awaiting helper: every module's tests use it, and so can
 * an adapter's tests next to the test kit's fakes (it needs no library beyond the JDK). Stateless and thread-safe.
 */
public final class Await {
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private Await() {
    }

    /**
     * Polls {@code condition} until it holds or {@code timeout} passes; returns whether it held.
     *
     * @param condition checked on the calling thread at once and then about every millisecond; it should be
     *                  cheap and must not block
     * @param timeout   how long to keep polling; zero or negative checks the condition once
     * @return {@code true} as soon as the condition holds, {@code false} if it did not by the deadline
     * @throws IllegalStateException if the calling thread is interrupted while waiting (its interrupt status
     *                               stays set)
     */
    public static boolean until(BooleanSupplier condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new IllegalStateException("interrupted while waiting");
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }

    /**
     * Polls {@code condition} until it holds; fails with an {@link AssertionError} carrying {@code description}
     * if it still does not hold after {@code timeout}.
     *
     * @param condition   checked as {@link #until} does
     * @param timeout     how long to keep polling
     * @param description what was awaited, for the failure's message; called only if the wait fails
     * @return the {@link System#nanoTime()} at which the condition was seen to hold
     * @throws AssertionError        if the condition did not hold within {@code timeout}
     * @throws IllegalStateException if the calling thread is interrupted while waiting
     */
    public static long untilOrFail(BooleanSupplier condition, Duration timeout, Supplier<String> description) {
        if (!until(condition, timeout)) {
            throw new AssertionError("not within " + timeout + ": " + description.get());
        }
        return System.nanoTime();
    }
}
