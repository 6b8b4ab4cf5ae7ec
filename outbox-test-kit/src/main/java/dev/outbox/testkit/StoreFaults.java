package dev.outbox.testkit;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Random;
import java.util.Set;

/**
 * Decides, call by call, whether an {@link InMemoryStore} call fails: before it changes anything (a failed
 * statement), or after it has changed the rows (a lost commit acknowledgement: the change is committed but the
 * caller is told it failed, as when the connection drops between COMMIT and its reply). Either way the call
 * throws a retriable {@link dev.outbox.spi.StoreException}. A plan may also have the store refuse a call for good
 * ({@link Fault#refuse()}: a non-retriable exception, as a database throws on a permission or constraint error). A decision may also delay the call, modelling a slow
 * statement.
 *
 * <p>Plug a plan in with {@link InMemoryStore#setFaults(StoreFaults)}; {@link #random(long)} builds a seeded
 * random one, and a lambda makes a scripted one:
 * <pre>{@code
 * AtomicInteger marks = new AtomicInteger();
 * store.setFaults(op -> op == Operation.MARK && marks.incrementAndGet() == 2 ? Fault.failAfter() : Fault.NONE);
 * }</pre>
 *
 * <p>Implementations must be thread-safe: the store asks from every calling thread. {@link #decide} is called
 * outside the store's lock, once per call, before the call does anything.
 */
@FunctionalInterface
public interface StoreFaults {

    /** The store calls a plan can fail. */
    enum Operation {
        /** {@code mark}: claiming rows for the leader (the mark harvest). */
        MARK,
        /** {@code read}: reading committed rows above a cursor (the cursor harvest), or a stream's poll. */
        READ,
        /** {@code purge}: deleting rows the broker acknowledged. */
        PURGE,
        /** {@code reset}: giving a leader's marked rows back (after a failed send or a lost leadership). */
        RESET,
        /** {@code retryLater}: recording a failed attempt and when to try again. */
        RETRY_LATER,
        /** {@code park}: moving poison rows to the parked area. */
        PARK,
        /** {@code parked} and {@code parkedKeys}: listing the parked rows, or the keys they hold. */
        PARKED,
        /** {@code replay}: moving parked rows back into the outbox. */
        REPLAY,
        /** {@code backlog}: counting the rows waiting. */
        BACKLOG,
        /** {@code parkedCount}: counting the parked rows. */
        PARKED_COUNT,
        /** {@code oldestCreateTime}: the creation time of the oldest row waiting (the lag). */
        OLDEST,
        /** {@code acquireEpoch}: taking a fresh fencing epoch when a leadership starts. */
        ACQUIRE_EPOCH
    }

    /** When an injected failure strikes. */
    enum Failure {
        /** No failure. */
        NONE,
        /** Throws before changing anything. */
        BEFORE,
        /** Applies the change, then throws: the caller sees a failure although the change is committed. */
        AFTER,
        /**
         * Throws a non-retriable {@link dev.outbox.spi.StoreException} before changing anything: the store refuses
         * the call for good, as a database does on a permission denied or a constraint violation.
         */
        REFUSED
    }

    /**
     * One decision: wait {@code delay}, then fail as {@code failure} says.
     *
     * @param delay   how long the call stalls before it runs (or fails), zero for none
     * @param failure whether and when it fails
     */
    record Fault(Duration delay, Failure failure) {
        /** No fault: the call runs normally. */
        public static final Fault NONE = new Fault(Duration.ZERO, Failure.NONE);

        /**
         * Checks the decision.
         *
         * @param delay   how long the call stalls before it runs (or fails); zero or positive
         * @param failure whether and when it fails; {@link Failure#NONE} for a mere delay
         * @throws NullPointerException     if {@code delay} or {@code failure} is {@code null}
         * @throws IllegalArgumentException if {@code delay} is negative
         */
        public Fault {
            Objects.requireNonNull(delay, "delay");
            Objects.requireNonNull(failure, "failure");
            if (delay.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative: " + delay);
            }
        }

        /**
         * Fails before changing anything.
         *
         * @return a decision to throw a retriable exception at once, without delay
         */
        public static Fault failBefore() {
            return new Fault(Duration.ZERO, Failure.BEFORE);
        }

        /**
         * Refuses the call for good (a non-retriable failure) before changing anything.
         *
         * @return a decision to throw a non-retriable exception at once, without delay
         */
        public static Fault refuse() {
            return new Fault(Duration.ZERO, Failure.REFUSED);
        }

        /**
         * Changes the rows, then fails (a lost commit acknowledgement).
         *
         * @return a decision to apply the call, then throw a retriable exception, without delay
         */
        public static Fault failAfter() {
            return new Fault(Duration.ZERO, Failure.AFTER);
        }

        /**
         * Stalls for {@code delay}, then runs normally.
         *
         * @param delay how long the call stalls (on the calling thread, outside the store's lock); zero or
         *              positive
         * @return a decision to delay the call and let it succeed
         * @throws NullPointerException     if {@code delay} is {@code null}
         * @throws IllegalArgumentException if {@code delay} is negative
         */
        public static Fault delay(Duration delay) {
            return new Fault(delay, Failure.NONE);
        }

        /**
         * This decision, stalling for {@code newDelay} first.
         *
         * @param newDelay the delay of the new decision, replacing this one's; zero or positive
         * @return a decision with the same failure and {@code newDelay}
         * @throws NullPointerException     if {@code newDelay} is {@code null}
         * @throws IllegalArgumentException if {@code newDelay} is negative
         */
        public Fault withDelay(Duration newDelay) {
            return new Fault(newDelay, failure);
        }
    }

    /**
     * Decides the fate of one call of {@code operation}. Never returns null.
     *
     * @param operation the store call about to run
     * @return the decision, {@link Fault#NONE} to let the call run normally; never {@code null}
     */
    Fault decide(Operation operation);

    /**
     * A plan that never injects anything.
     *
     * @return a stateless plan that always decides {@link Fault#NONE}; the store's default
     */
    static StoreFaults none() {
        return operation -> Fault.NONE;
    }

    /**
     * Starts a random plan driven by {@code new Random(seed)}: the same seed gives the same decisions.
     *
     * @param seed the seed; log it with a failing test so that the run can be repeated
     * @return a new builder that injects nothing until its probabilities are set
     */
    static RandomBuilder random(long seed) {
        return new RandomBuilder(seed);
    }

    /**
     * Builds a seeded random plan: each call of a chosen operation fails before with probability
     * {@code failBefore}, else after with probability {@code failAfter}, and is delayed by a uniformly random
     * time up to {@code maxDelay} with probability {@code delayProbability}. Not thread-safe; the plan it builds
     * is.
     */
    final class RandomBuilder {
        private final long seed;
        private double failBefore;
        private double failAfter;
        private double delayProbability;
        private Duration maxDelay = Duration.ZERO;
        private Set<Operation> operations = EnumSet.of(Operation.MARK, Operation.READ, Operation.PURGE, Operation.RESET,
                Operation.RETRY_LATER, Operation.PARK);

        private RandomBuilder(long seed) {
            this.seed = seed;
        }

        /**
         * Probability, per call, of failing before any change. Default 0.
         *
         * @param probability from 0 to 1; with {@link #failAfter} at most 1 in all (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder failBefore(double probability) {
            this.failBefore = probability(probability, "failBefore");
            return this;
        }

        /**
         * Probability, per call, of failing after the change was applied. Default 0.
         *
         * @param probability from 0 to 1; with {@link #failBefore} at most 1 in all (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder failAfter(double probability) {
            this.failAfter = probability(probability, "failAfter");
            return this;
        }

        /**
         * Probability, per call, of a delay uniformly drawn from zero to {@code max}. Default none. A call may be
         * both delayed and failed.
         *
         * @param probability from 0 to 1
         * @param max         the longest delay, zero or positive (zero: no delays)
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 or {@code max} is
         *                                  negative
         * @throws NullPointerException     if {@code max} is {@code null}
         */
        public RandomBuilder delay(double probability, Duration max) {
            this.delayProbability = probability(probability, "delay probability");
            Objects.requireNonNull(max, "max delay");
            if (max.isNegative()) {
                throw new IllegalArgumentException("max delay must not be negative: " + max);
            }
            this.maxDelay = max;
            return this;
        }

        /**
         * The operations faults apply to. Default MARK, READ, PURGE, RESET, RETRY_LATER and PARK; others always run
         * normally.
         *
         * @param first an operation to apply faults to
         * @param more  more of them; replaces the earlier set
         * @return this builder
         * @throws NullPointerException if an operation is {@code null}
         */
        public RandomBuilder operations(Operation first, Operation... more) {
            this.operations = EnumSet.of(first, more);
            return this;
        }

        /**
         * Builds the plan. The builder may be reused: later changes do not affect plans already built.
         *
         * @return a new plan, thread-safe (decisions are drawn under its lock, in call order), with a
         *         {@code toString()} that names its seed and settings
         * @throws IllegalArgumentException if {@code failBefore + failAfter} exceeds 1
         */
        public StoreFaults build() {
            if (failBefore + failAfter > 1.0) {
                throw new IllegalArgumentException("failBefore + failAfter must not exceed 1: " + failBefore
                        + " + " + failAfter);
            }
            Random random = new Random(seed);
            double before = failBefore;
            double after = failAfter;
            double delayP = delayProbability;
            long maxDelayNanos = maxDelay.toNanos();
            Set<Operation> ops = EnumSet.copyOf(operations);
            return new StoreFaults() {
                @Override
                public synchronized Fault decide(Operation operation) {
                    if (!ops.contains(operation)) {
                        return Fault.NONE;
                    }
                    double u = random.nextDouble();
                    Failure failure = u < before ? Failure.BEFORE : u < before + after ? Failure.AFTER : Failure.NONE;
                    Duration delay = Duration.ZERO;
                    if (maxDelayNanos > 0 && random.nextDouble() < delayP) {
                        delay = Duration.ofNanos((long) (random.nextDouble() * maxDelayNanos));
                    }
                    return failure == Failure.NONE && delay.isZero() ? Fault.NONE : new Fault(delay, failure);
                }

                @Override
                public String toString() {
                    return "StoreFaults.random(seed=" + seed + ", failBefore=" + before + ", failAfter=" + after
                            + ", delay=" + delayP + " up to " + maxDelay + ", operations=" + ops + ")";
                }
            };
        }

        private static double probability(double p, String name) {
            if (!(p >= 0.0 && p <= 1.0)) {
                throw new IllegalArgumentException(name + " must be a probability between 0 and 1: " + p);
            }
            return p;
        }
    }
}
