package dev.outbox.testkit;

import dev.outbox.OutboxRecord;

import java.time.Duration;
import java.util.Objects;
import java.util.Random;
import java.util.function.Predicate;

/**
 * Decides, send by send, what an {@link InMemoryBroker} does with a record: acknowledge it (after a delay, so
 * that acknowledgements of different records arrive out of order), fail it retriably or permanently, lose its
 * acknowledgement, hang, or throw from {@code send} itself.
 *
 * <p>Plug a plan in with {@link InMemoryBroker#setFaults(BrokerFaults)}; {@link #random(long)} builds a seeded
 * random one, and a lambda makes a scripted one:
 * <pre>{@code
 * broker.setFaults(record -> record.key().equals("poison") ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK);
 * }</pre>
 *
 * <p>Implementations must be thread-safe; {@link #decide} is called once per send, on the sending thread.
 */
@FunctionalInterface
public interface BrokerFaults {

    /** What happens to one sent record. */
    enum Outcome {
        /** Accepted: appended to the broker's log, and the send completes normally. */
        ACK,
        /** Not accepted; the send completes with a retriable {@link dev.outbox.spi.DeliveryException}. */
        FAIL_RETRIABLE,
        /** Not accepted; the send completes with a permanent {@link dev.outbox.spi.DeliveryException}. */
        FAIL_PERMANENT,
        /**
         * Not accepted because the broker is unavailable for every record (an outage); the send completes with a
         * {@link dev.outbox.spi.DeliveryException#outage} failure, which the dispatcher never counts or parks.
         */
        FAIL_OUTAGE,
        /**
         * Accepted and appended to the log, but the send completes with a retriable failure: the
         * acknowledgement was lost. A retry then delivers the record a second time, a legitimate duplicate.
         */
        LOST_ACK,
        /**
         * Neither accepted nor failed: the send stays pending until {@link InMemoryBroker#releaseHung()},
         * {@link InMemoryBroker#failHung()}, the broker's delivery timeout, or {@code close}. Without a delivery
         * timeout this breaks the port's promise that every send completes within a bound: use it to test the
         * dispatcher's own timeouts.
         */
        HANG,
        /** {@code send} throws a retriable {@link dev.outbox.spi.DeliveryException} instead of returning. */
        THROW
    }

    /**
     * One decision.
     *
     * @param outcome what happens to the record
     * @param delay   how long after {@code send} the outcome takes effect (ignored for {@code HANG} and
     *                {@code THROW}); delays that differ between records reorder their completions
     */
    record Fault(Outcome outcome, Duration delay) {
        /** Acknowledged without delay. */
        public static final Fault ACK = new Fault(Outcome.ACK, Duration.ZERO);

        /**
         * Checks the decision.
         *
         * @param outcome what happens to the record; not {@code null}
         * @param delay   how long after {@code send} the outcome takes effect; zero or positive
         * @throws NullPointerException     if {@code outcome} or {@code delay} is {@code null}
         * @throws IllegalArgumentException if {@code delay} is negative
         */
        public Fault {
            Objects.requireNonNull(outcome, "outcome");
            Objects.requireNonNull(delay, "delay");
            if (delay.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative: " + delay);
            }
        }

        /**
         * {@code outcome} without delay.
         *
         * @param outcome what happens to the record; not {@code null}
         * @return a decision for {@code outcome} at once
         * @throws NullPointerException if {@code outcome} is {@code null}
         */
        public static Fault of(Outcome outcome) {
            return new Fault(outcome, Duration.ZERO);
        }

        /**
         * {@code outcome} after {@code delay}.
         *
         * @param outcome what happens to the record; not {@code null}
         * @param delay   how long after {@code send} it takes effect; zero or positive
         * @return a decision for {@code outcome} after {@code delay}
         * @throws NullPointerException     if an argument is {@code null}
         * @throws IllegalArgumentException if {@code delay} is negative
         */
        public static Fault of(Outcome outcome, Duration delay) {
            return new Fault(outcome, delay);
        }
    }

    /**
     * Decides the fate of {@code record}. Never returns null.
     *
     * @param record the record being sent (a retry of a record is a new call)
     * @return the decision, {@link Fault#ACK} for a normal send; never {@code null}
     */
    Fault decide(OutboxRecord record);

    /**
     * A plan that acknowledges everything at once.
     *
     * @return a stateless plan that always decides {@link Fault#ACK}; the broker's default
     */
    static BrokerFaults none() {
        return record -> Fault.ACK;
    }

    /**
     * Starts a random plan driven by {@code new Random(seed)}: the same seed and the same sends in the same order
     * give the same decisions.
     *
     * @param seed the seed; log it with a failing test so that the run can be repeated
     * @return a new builder that acknowledges everything at once until its probabilities are set
     */
    static RandomBuilder random(long seed) {
        return new RandomBuilder(seed);
    }

    /**
     * Builds a seeded random plan. For each record: if it matches the permanent-failure predicate it fails
     * permanently; otherwise one draw picks {@code FAIL_RETRIABLE}, {@code LOST_ACK}, {@code HANG} or
     * {@code THROW} with the configured probabilities, else {@code ACK}; and the outcome takes effect after a
     * delay drawn uniformly between zero and {@code maxAckDelay}. Not thread-safe; the plan it builds is.
     */
    final class RandomBuilder {
        private final long seed;
        private double failRetriably;
        private double loseAck;
        private double hang;
        private double throwOnSend;
        private Duration maxAckDelay = Duration.ZERO;
        private Predicate<OutboxRecord> permanent = record -> false;

        private RandomBuilder(long seed) {
            this.seed = seed;
        }

        /**
         * Probability of a retriable failure. Default 0.
         *
         * @param probability from 0 to 1, per send; the four failure probabilities may add up to at most 1
         *                    (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder failRetriably(double probability) {
            this.failRetriably = probability(probability, "failRetriably");
            return this;
        }

        /**
         * Probability of a lost acknowledgement (delivered, reported failed). Default 0.
         *
         * @param probability from 0 to 1, per send; the four failure probabilities may add up to at most 1
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder loseAcks(double probability) {
            this.loseAck = probability(probability, "loseAcks");
            return this;
        }

        /**
         * Probability of a hung send ({@link Outcome#HANG}). Default 0.
         *
         * @param probability from 0 to 1, per send; the four failure probabilities may add up to at most 1
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder hang(double probability) {
            this.hang = probability(probability, "hang");
            return this;
        }

        /**
         * Probability that {@code send} throws. Default 0.
         *
         * @param probability from 0 to 1, per send; the four failure probabilities may add up to at most 1
         * @return this builder
         * @throws IllegalArgumentException if {@code probability} is not between 0 and 1 (or is NaN)
         */
        public RandomBuilder throwOnSend(double probability) {
            this.throwOnSend = probability(probability, "throwOnSend");
            return this;
        }

        /**
         * Each completion is delayed by a uniformly random time up to {@code max}. Default zero.
         *
         * @param max the longest delay, zero or positive (zero: every outcome at once)
         * @return this builder
         * @throws NullPointerException     if {@code max} is {@code null}
         * @throws IllegalArgumentException if {@code max} is negative
         */
        public RandomBuilder delayAcks(Duration max) {
            Objects.requireNonNull(max, "max ack delay");
            if (max.isNegative()) {
                throw new IllegalArgumentException("max ack delay must not be negative: " + max);
            }
            this.maxAckDelay = max;
            return this;
        }

        /**
         * Records matching {@code predicate} always fail permanently (poison records). Default none.
         *
         * @param predicate which records are poison; called once per send, under the plan's lock. Not
         *                  {@code null}.
         * @return this builder
         * @throws NullPointerException if {@code predicate} is {@code null}
         */
        public RandomBuilder failPermanentlyWhen(Predicate<OutboxRecord> predicate) {
            this.permanent = Objects.requireNonNull(predicate, "predicate");
            return this;
        }

        /**
         * Builds the plan. The builder may be reused: later changes do not affect plans already built.
         *
         * @return a new plan, thread-safe (decisions are drawn under its lock, in call order), with a
         *         {@code toString()} that names its seed and settings
         * @throws IllegalArgumentException if the four failure probabilities add up to more than 1
         */
        public BrokerFaults build() {
            double total = failRetriably + loseAck + hang + throwOnSend;
            if (total > 1.0) {
                throw new IllegalArgumentException("the failure probabilities add up to more than 1: " + total);
            }
            Random random = new Random(seed);
            double[] cumulative = {failRetriably, failRetriably + loseAck, failRetriably + loseAck + hang, total};
            Outcome[] outcomes = {Outcome.FAIL_RETRIABLE, Outcome.LOST_ACK, Outcome.HANG, Outcome.THROW};
            long maxDelayNanos = maxAckDelay.toNanos();
            Predicate<OutboxRecord> poison = permanent;
            String description = "BrokerFaults.random(seed=" + seed + ", failRetriably=" + failRetriably
                    + ", loseAcks=" + loseAck + ", hang=" + hang + ", throwOnSend=" + throwOnSend
                    + ", maxAckDelay=" + maxAckDelay + ")";
            return new BrokerFaults() {
                @Override
                public synchronized Fault decide(OutboxRecord record) {
                    Duration delay = maxDelayNanos == 0 ? Duration.ZERO
                            : Duration.ofNanos((long) (random.nextDouble() * maxDelayNanos));
                    if (poison.test(record)) {
                        return new Fault(Outcome.FAIL_PERMANENT, delay);
                    }
                    double u = random.nextDouble();
                    for (int i = 0; i < cumulative.length; i++) {
                        if (u < cumulative[i]) {
                            return new Fault(outcomes[i], delay);
                        }
                    }
                    return new Fault(Outcome.ACK, delay);
                }

                @Override
                public String toString() {
                    return description;
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
