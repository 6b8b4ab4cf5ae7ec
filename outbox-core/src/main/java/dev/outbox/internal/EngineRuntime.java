package dev.outbox.internal;

import java.time.Clock;
import java.util.UUID;
import java.util.concurrent.locks.Lock;

/**
 * Everything in the harvest engine that decides timing: its threads, its locks and the conditions it waits on,
 * the monotonic and the wall clock, and its randomness. {@link DefaultDispatcher} takes all of these from one
 * runtime, so that production wires the JVM's ({@link #system(Clock)}) and the test kit's deterministic
 * simulation wires a single scheduler that lets one worker run at a time, chooses every interleaving and moves a
 * virtual clock (see {@code dev.outbox.testkit.sim}).
 *
 * <p>Not part of the public API: it may change in any release. Implementations must be thread-safe.
 */
public interface EngineRuntime {

    /** The monotonic clock, in nanoseconds, as {@link System#nanoTime()}. */
    long nanoTime();

    /** The wall clock: the times of next attempts, of health events and of samples. */
    Clock clock();

    /** A random number in {@code [0, 1)}: the jitter of retry backoffs. */
    double random();

    /** A random UUID: instance and leader ids. */
    UUID randomUuid();

    /**
     * Starts a worker running {@code body}, named {@code name} (a daemon thread, in production).
     */
    Worker start(String name, Runnable body);

    /** A new reentrant lock whose conditions' timed waits run on this runtime's clock. */
    Lock newLock();

    /**
     * The orderings of the protocol the engine follows: {@link ProtocolOrder#STANDARD} in production. The test
     * kit's simulation may give one that breaks a rule, to prove that it finds the break.
     *
     * @return the protocol's orderings; never null
     */
    default ProtocolOrder protocolOrder() {
        return ProtocolOrder.STANDARD;
    }

    /** A worker: a thread of the engine. */
    interface Worker {
        /** Interrupts the worker: a wait it is in (or enters next) ends with {@link InterruptedException}. */
        void interrupt();

        /**
         * Waits at most {@code nanos} for the worker to end.
         *
         * @return whether it ended
         */
        boolean join(long nanos) throws InterruptedException;

        /** Whether the calling thread is this worker. */
        boolean isCurrent();
    }

    /** The JVM's threads, locks and {@link System#nanoTime()}, with the given wall clock. */
    static EngineRuntime system(Clock clock) {
        return new SystemRuntime(clock);
    }
}
