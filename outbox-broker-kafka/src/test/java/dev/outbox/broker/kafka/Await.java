package dev.outbox.broker.kafka;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Waits for a condition with a deadline, polling every 5 ms; never sleeps to make time pass. */
final class Await {
    private Await() {
    }

    /**
     * @return the nanoTime at which the condition was first seen true
     * @throws AssertionError naming {@code what} if it is still false after {@code timeout}
     */
    static long until(Duration timeout, String what, BooleanSupplier condition) {
        return until(timeout, () -> what, condition);
    }

    static long until(Duration timeout, Supplier<String> what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return System.nanoTime();
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + timeout + ": " + what.get());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }
}
