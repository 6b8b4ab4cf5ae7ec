package dev.outbox.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * An exponential backoff, as a value: the wait after failure number {@code n} is {@code first × 2^(n-1)}, capped at
 * {@code max}. The one place the outbox computes how long to wait before trying again — the engine's per-record
 * retries and its store writes, the commit listener, the WAL stream's take-over, the inbox consumer — so that a
 * change of policy is made here. Immutable and thread-safe; a {@link Sequence} taken from it is not.
 */
public final class Backoff {
    private final long firstNanos;
    private final long maxNanos;

    private Backoff(long firstNanos, long maxNanos) {
        this.firstNanos = firstNanos;
        this.maxNanos = maxNanos;
    }

    /**
     * A backoff that starts at {@code first} and doubles up to {@code max}.
     *
     * @param first the wait after the first failure; not null, positive
     * @param max   the longest wait; not null, at least {@code first}
     * @return the backoff
     * @throws NullPointerException     if {@code first} or {@code max} is null
     * @throws IllegalArgumentException naming the value if {@code first} is not positive or {@code max} is less than
     *                                  {@code first}
     */
    public static Backoff exponential(Duration first, Duration max) {
        Objects.requireNonNull(first, "first");
        Objects.requireNonNull(max, "max");
        if (first.isNegative() || first.isZero()) {
            throw new IllegalArgumentException("the first backoff must be positive: " + first);
        }
        if (max.compareTo(first) < 0) {
            throw new IllegalArgumentException("the longest backoff (" + max + ") must not be shorter than the first ("
                    + first + ")");
        }
        return new Backoff(first.toNanos(), max.toNanos());
    }

    /**
     * The wait after the first failure.
     *
     * @return the first wait, positive
     */
    public Duration first() {
        return Duration.ofNanos(firstNanos);
    }

    /**
     * The longest wait.
     *
     * @return the cap, at least {@link #first()}
     */
    public Duration max() {
        return Duration.ofNanos(maxNanos);
    }

    /**
     * The wait after failure number {@code attempt} (from 1), in nanoseconds: {@code first × 2^(attempt-1)}, capped
     * at {@code max}; {@code first} for an attempt below 1.
     *
     * @param attempt the failure's number, from 1
     * @return the wait in nanoseconds, between {@code first} and {@code max}
     */
    public long nanos(int attempt) {
        long d = firstNanos;
        for (int i = 1; i < attempt && d < maxNanos; i++) {
            d = d > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : d * 2;
        }
        return Math.min(d, maxNanos);
    }

    /**
     * {@link #nanos(int)} as a duration.
     *
     * @param attempt the failure's number, from 1
     * @return the wait, between {@code first} and {@code max}
     */
    public Duration delay(int attempt) {
        return Duration.ofNanos(nanos(attempt));
    }

    /**
     * {@link #delay(int)} less a random part of its half ("equal jitter"): between half and all of it, so that keys
     * that failed together do not retry together.
     *
     * @param attempt the failure's number, from 1
     * @param jitter  a value in [0, 1); anything else counts as 0
     * @return the wait, between half of {@link #delay(int)} and all of it
     */
    public Duration delay(int attempt, double jitter) {
        long nanos = nanos(attempt);
        double j = jitter >= 0 && jitter < 1 ? jitter : 0;
        return Duration.ofNanos(nanos / 2 + (long) (nanos / 2 * j));
    }

    /**
     * A new sequence of this backoff's waits, for a loop that retries.
     *
     * @return a new sequence with no failure counted
     */
    public Sequence sequence() {
        return new Sequence(this);
    }

    @Override
    public String toString() {
        return "Backoff{" + first() + " doubling up to " + max() + '}';
    }

    /**
     * The waits of one loop that retries: each {@link #next} doubles the wait, up to the maximum, until
     * {@link #reset} after a success. Not thread-safe: one loop owns it.
     */
    public static final class Sequence {
        private final Backoff backoff;
        private int failures;

        private Sequence(Backoff backoff) {
            this.backoff = backoff;
        }

        /**
         * Counts one more failure and returns the wait after it, in nanoseconds.
         *
         * @return the wait in nanoseconds, between the backoff's first and its max
         */
        public long nextNanos() {
            if (failures < Integer.MAX_VALUE) {
                failures++;
            }
            return backoff.nanos(failures);
        }

        /**
         * Counts one more failure and returns the wait after it.
         *
         * @return the wait, between the backoff's first and its max
         */
        public Duration next() {
            return Duration.ofNanos(nextNanos());
        }

        /**
         * Failures counted since the last {@link #reset}.
         *
         * @return the count, 0 or more (it stops at {@link Integer#MAX_VALUE})
         */

        public int failures() {
            return failures;
        }

        /** After a success: the next wait is the first again. */
        public void reset() {
            failures = 0;
        }
    }
}
