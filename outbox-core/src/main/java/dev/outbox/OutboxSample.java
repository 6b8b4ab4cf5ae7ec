package dev.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the leading dispatcher read from its store at one instant: the backlog, the parked rows, and the age of
 * the head of the outbox. Immutable and thread-safe.
 *
 * @param at               when the sample was taken (dispatcher's clock)
 * @param backlog          rows waiting in the outbox ({@link dev.outbox.spi.Gauges#backlog}, may be an estimate)
 * @param parked           rows in the parked area ({@link dev.outbox.spi.Gauges#parkedCount})
 * @param oldestCreateTime the creation time of the head of the outbox — the unparked row with the lowest id,
 *                         the next the dispatcher will harvest — or {@code null} if the outbox is empty
 * @param retainedBytes    the bytes the database keeps for the harvest ({@link dev.outbox.spi.Gauges#retainedBytes}:
 *                         the write-ahead log a replication slot holds back), or -1 for a store that keeps none
 * @param oldestAge        the head's age measured by the database's clock ({@link dev.outbox.spi.Gauges#oldestAge}),
 *                         or {@code null} if the outbox is empty or the store has no clock of its own
 */
public record OutboxSample(Instant at, long backlog, long parked, Instant oldestCreateTime, long retainedBytes,
                           Duration oldestAge) {

    /**
     * Checks the components.
     *
     * @param at               when the sample was taken; not null
     * @param backlog          rows waiting, 0 or more
     * @param parked           parked rows, 0 or more
     * @param oldestCreateTime the head's creation time, or null for an empty outbox
     * @param retainedBytes    the bytes kept for the harvest, 0 or more; -1 for none
     * @param oldestAge        the head's age by the database's clock, zero or more; null if not measured
     * @throws IllegalArgumentException if {@code at} is null, a count is negative, {@code retainedBytes} is below
     *                                  -1 or {@code oldestAge} is negative
     */
    public OutboxSample {
        if (at == null) {
            throw new IllegalArgumentException("at must not be null");
        }
        if (backlog < 0 || parked < 0) {
            throw new IllegalArgumentException("backlog (" + backlog + ") and parked (" + parked
                    + ") must not be negative");
        }
        if (retainedBytes < -1) {
            throw new IllegalArgumentException("retainedBytes must be -1 (none) or more, was " + retainedBytes);
        }
        if (oldestAge != null && oldestAge.isNegative()) {
            throw new IllegalArgumentException("oldestAge must not be negative, was " + oldestAge);
        }
    }

    /**
     * A sample whose head's age the dispatcher measures by its own clock ({@link #lag()}).
     *
     * @param at               when the sample was taken; not null
     * @param backlog          rows waiting, 0 or more
     * @param parked           parked rows, 0 or more
     * @param oldestCreateTime the head's creation time, or null for an empty outbox
     * @param retainedBytes    the bytes kept for the harvest, 0 or more; -1 for none
     * @throws IllegalArgumentException if {@code at} is null, a count is negative or {@code retainedBytes} is below
     *                                  -1
     */
    public OutboxSample(Instant at, long backlog, long parked, Instant oldestCreateTime, long retainedBytes) {
        this(at, backlog, parked, oldestCreateTime, retainedBytes, null);
    }

    /**
     * A sample of a store that retains nothing for its harvest (a table): {@code retainedBytes} -1.
     *
     * @param at               when the sample was taken; not null
     * @param backlog          rows waiting, 0 or more
     * @param parked           parked rows, 0 or more
     * @param oldestCreateTime the head's creation time, or null for an empty outbox
     * @throws IllegalArgumentException if {@code at} is null or a count is negative
     */
    public OutboxSample(Instant at, long backlog, long parked, Instant oldestCreateTime) {
        this(at, backlog, parked, oldestCreateTime, -1, null);
    }

    /**
     * The bytes the database keeps for the harvest, empty for a store that keeps none.
     *
     * @return the bytes, or empty
     */
    public OptionalLong retained() {
        return retainedBytes < 0 ? OptionalLong.empty() : OptionalLong.of(retainedBytes);
    }

    /**
     * The creation time of the head of the outbox, empty if the outbox is empty.
     *
     * @return {@link #oldestCreateTime()} as an optional
     */
    public Optional<Instant> oldest() {
        return Optional.ofNullable(oldestCreateTime);
    }

    /**
     * The lag: the age of the oldest unpublished row at {@link #at()}, zero when the outbox is empty. Measured by
     * the database's clock where the store offers it ({@link #oldestAge()}), so no clock skew between the database
     * and this host enters it; otherwise by this host's clock from the creation time, where a skew that makes it
     * negative is reported as zero.
     *
     * @return the lag, zero or more
     */
    public Duration lag() {
        if (oldestAge != null) {
            return oldestAge;
        }
        if (oldestCreateTime == null || !at.isAfter(oldestCreateTime)) {
            return Duration.ZERO;
        }
        return Duration.between(oldestCreateTime, at);
    }
}
