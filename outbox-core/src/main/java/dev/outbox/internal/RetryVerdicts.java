package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.Backoff;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.function.DoubleSupplier;

/**
 * The delivery retry policy as a value: what a failed delivery becomes — parked after {@code maxAttempts} failures or
 * on a permanent one, else retried after an exponential backoff with jitter from its attempt count — and, in an
 * outage (the broker unavailable for every record), the backoff every failing key shares, which grows at most once
 * per first backoff and ends with the next acknowledgement.
 *
 * <p>Not thread-safe: owned by the {@link KeySchedule}, guarded like it.
 */
final class RetryVerdicts {
    private final Duration firstBackoff;
    /** How long a record waits before its next attempt, before jitter. */
    private final Backoff retries;
    private final int maxAttempts;
    private final Clock clock;
    private final DoubleSupplier jitter;
    /** Outage failures since the last acknowledgement: the exponent of the backoff every key shares. */
    private int outageStreak;
    /** When {@link #outageStreak} last grew. */
    private Instant lastOutageStep = Instant.MIN;

    RetryVerdicts(Duration firstBackoff, Duration maxBackoff, int maxAttempts, Clock clock, DoubleSupplier jitter) {
        this.firstBackoff = Objects.requireNonNull(firstBackoff, "firstBackoff");
        this.retries = Backoff.exponential(firstBackoff, Objects.requireNonNull(maxBackoff, "maxBackoff"));
        this.maxAttempts = maxAttempts;
        this.clock = Objects.requireNonNull(clock, "clock");
        this.jitter = Objects.requireNonNull(jitter, "jitter");
    }

    /** The verdict on a failed delivery of {@code r}. */
    Verdict failure(OutboxRecord r, boolean permanent) {
        int attempts = r.attempts() + 1;
        if (permanent || attempts >= maxAttempts) {
            return new Verdict(true, attempts, null);
        }
        return new Verdict(false, attempts, clock.instant().plus(backoff(attempts)));
    }

    /** The verdict on a delivery of {@code r} that failed in an outage: never parked, the attempt not counted. */
    Verdict outage(OutboxRecord r) {
        Instant now = clock.instant();
        // Many records fail together in an outage: the backoff doubles at most once per first backoff, not per record.
        if (outageStreak == 0 || !now.isBefore(lastOutageStep.plus(firstBackoff))) {
            outageStreak = Math.min(outageStreak + 1, 62);
            lastOutageStep = now;
        }
        return new Verdict(false, r.attempts(), now.plus(backoff(outageStreak)), true);
    }

    /** A record was acknowledged: an outage's shared backoff ends. */
    void acknowledged() {
        outageStreak = 0;
    }

    /** Whether outage failures were seen since the last acknowledgement. */
    boolean inOutage() {
        return outageStreak > 0;
    }

    /**
     * The backoff before the retry that follows failure number {@code attempts}: {@code firstBackoff × 2^(attempts-1)},
     * capped at {@code maxBackoff}, of which a random half is taken off ("equal jitter"), so that keys that failed
     * together do not retry together.
     */
    Duration backoff(int attempts) {
        return retries.delay(attempts, jitter.getAsDouble());
    }
}
