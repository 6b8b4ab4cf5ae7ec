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

        public Fault {
            Objects.requireNonNull(outcome, "outcome");
            Objects.requireNonNull(delay, "delay");
            if (delay.isNegative()) {
                throw new IllegalArgumentException("delay must not be negative: " + delay);
            }
        }

        /** {@code outcome} without delay. */
        public static Fault of(Outcome outcome) {
            return new Fault(outcome, Duration.ZERO);
        }

        /** {@code outcome} after {@code delay}. */
        public static Fault of(Outcome outcome, Duration delay) {
            return new Fault(outcome, delay);
        }
    }

    /** Decides the fate of {@code record}. Never returns null. */
    Fault decide(OutboxRecord record);

    /** A plan that acknowledges everything at once. */
    static BrokerFaults none() {
        return record -> Fault.ACK;
    }

    /** Starts a random plan driven by {@code new Random(seed)}. */
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

        /** Probability of a retriable failure. Default 0. */
        public RandomBuilder failRetriably(double probability) {
            this.failRetriably = probability(probability, "failRetriably");
            return this;
        }

        /** Probability of a lost acknowledgement (delivered, reported failed). Default 0. */
        public RandomBuilder loseAcks(double probability) {
            this.loseAck = probability(probability, "loseAcks");
            return this;
        }

        /** Probability of a hung send. Default 0. */
        public RandomBuilder hang(double probability) {
            this.hang = probability(probability, "hang");
            return this;
        }

        /** Probability that {@code send} throws. Default 0. */
        public RandomBuilder throwOnSend(double probability) {
            this.throwOnSend = probability(probability, "throwOnSend");
            return this;
        }

        /** Each completion is delayed by a uniformly random time up to {@code max}. Default zero. */
        public RandomBuilder delayAcks(Duration max) {
            Objects.requireNonNull(max, "max ack delay");
            if (max.isNegative()) {
                throw new IllegalArgumentException("max ack delay must not be negative: " + max);
            }
            this.maxAckDelay = max;
            return this;
        }

        /** Records matching {@code predicate} always fail permanently (poison records). Default none. */
        public RandomBuilder failPermanentlyWhen(Predicate<OutboxRecord> predicate) {
            this.permanent = Objects.requireNonNull(predicate, "predicate");
            return this;
        }

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
