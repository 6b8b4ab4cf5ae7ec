package dev.outbox.testkit;

import dev.outbox.spi.StoreException;
import dev.outbox.testkit.StoreFaults.Failure;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The fault plan of an {@link InMemoryStore} and the count of its calls: every call of the port (and of its views)
 * {@link #enter enters} before its change, where the plan may delay it or fail it before any change, and
 * {@link #leave leaves} after, where the plan may fail it although its change was applied.
 *
 * <p>Thread-safe: the plan is replaced atomically, the counts are atomic; an injected delay is spent by the calling
 * thread, outside the store's lock.
 */
final class InMemoryFaultGate {
    private final Map<Operation, AtomicLong> calls = new EnumMap<>(Operation.class);
    private final Map<Operation, AtomicLong> injected = new EnumMap<>(Operation.class);
    private volatile StoreFaults faults = StoreFaults.none();

    InMemoryFaultGate() {
        for (Operation op : Operation.values()) {
            calls.put(op, new AtomicLong());
            injected.put(op, new AtomicLong());
        }
    }

    /** Replaces the plan; takes effect for the next call. */
    void setFaults(StoreFaults faults) {
        this.faults = Objects.requireNonNull(faults, "faults");
    }

    /** The plan in force. */
    StoreFaults faults() {
        return faults;
    }

    /** How many times {@code operation} was called, whether it failed or not. */
    long calls(Operation operation) {
        return calls.get(operation).get();
    }

    /** How many calls of {@code operation} the plan failed (delays alone do not count). */
    long injectedFailures(Operation operation) {
        return injected.get(operation).get();
    }

    /**
     * Counts a call of {@code operation} and asks the plan: spends its delay, throws its failure before the change,
     * or returns the fault for {@link #leave}. Call it before taking the store's lock.
     */
    Fault enter(Operation operation) {
        calls.get(operation).incrementAndGet();
        Fault fault = faults.decide(operation);
        if (fault == null) {
            throw new IllegalStateException("fault plan " + faults + " returned null for " + operation);
        }
        if (!fault.delay().isZero()) {
            long deadline = System.nanoTime() + fault.delay().toNanos();
            for (long left; (left = deadline - System.nanoTime()) > 0; ) {
                LockSupport.parkNanos(left);
                if (Thread.currentThread().isInterrupted()) {
                    injected.get(operation).incrementAndGet();
                    throw new StoreException("injected delay of " + operation + " interrupted", null, true);
                }
            }
        }
        if (fault.failure() == Failure.REFUSED) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + operation + " refused for good (a permission or constraint"
                    + " error); not retriable", null, false);
        }
        if (fault.failure() == Failure.BEFORE) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + operation + " failed before any change", null, true);
        }
        return fault;
    }

    /** Throws the failure after the change that {@code fault} plans, if any; {@code what} names the call. */
    void leave(Operation operation, Fault fault, String what) {
        if (fault.failure() == Failure.AFTER) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + what + " was applied but reported as failed"
                    + " (a lost commit acknowledgement)", null, true);
        }
    }
}
