package dev.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * A snapshot of a dispatcher's health, returned by {@link Dispatcher#health()}: its status in leader election,
 * its leader id, when it last marked and purged successfully, its last failure, and the lag of the outbox as
 * last sampled. Built from values the engine keeps up to date as it works, so taking one costs no I/O; it holds
 * the engine's lock only for an instant, to count the records in flight.
 *
 * <p>Immutable and thread-safe.
 */
public final class DispatcherHealth {

    /** Where a dispatcher stands. */
    public enum Status {
        /** Not started yet, or started and not yet through its first round of leader election. */
        STARTING,
        /** Leading: marking and publishing. */
        LEADER,
        /** Running, another instance leads (or none does yet); ready to take over. */
        STANDBY,
        /**
         * Stopped publishing at once because it could no longer be sure it leads (its heartbeats stopped
         * arriving, or its group session was lost); it will lead again, with a fresh leader id, if it can.
         */
        FENCED,
        /** Closing or closed: it will never publish again. */
        CLOSED
    }

    /**
     * A failed store or broker operation.
     *
     * @param operation what failed: "mark", "purge", "retryLater", "park", "send", "sample", or "dispatcher" when a
     *                  thread of the dispatcher died and closed it
     * @param error     the error's class and message
     * @param at        when it failed (dispatcher's clock)
     */
    public record Failure(String operation, String error, Instant at) {
        /**
         * Checks the components.
         *
         * @param operation what failed; not null
         * @param error     the error's class and message; not null
         * @param at        when it failed; not null
         * @throws NullPointerException if a component is null
         */
        public Failure {
            Objects.requireNonNull(operation, "operation");
            Objects.requireNonNull(error, "error");
            Objects.requireNonNull(at, "at");
        }
    }

    private final Status status;
    private final UUID leaderId;
    private final Instant lastMark;
    private final Instant lastPurge;
    private final Failure lastFailure;
    private final OutboxSample lastSample;
    private final int inFlightRecords;
    private final long callbackErrors;
    private final Instant outageSince;
    private final int heldRecords;
    private final int heldKeys;
    private final Instant storeUnreachableSince;
    private final Duration sinceLastRead;

    private DispatcherHealth(Builder b) {
        this.status = Objects.requireNonNull(b.status, "status");
        this.leaderId = b.leaderId;
        this.lastMark = b.lastMark;
        this.lastPurge = b.lastPurge;
        this.lastFailure = b.lastFailure;
        this.lastSample = b.lastSample;
        this.inFlightRecords = b.inFlightRecords;
        this.callbackErrors = b.callbackErrors;
        this.outageSince = b.outageSince;
        this.heldRecords = b.heldRecords;
        this.heldKeys = b.heldKeys;
        this.storeUnreachableSince = b.storeUnreachableSince;
        this.sinceLastRead = b.sinceLastRead;
        if (status == Status.LEADER && leaderId == null) {
            throw new IllegalArgumentException("a LEADER health needs a leader id");
        }
    }

    /**
     * Starts a builder; used by dispatcher implementations and tests.
     *
     * @param status the dispatcher's status; not null
     * @return a new builder with every other value empty or zero
     * @throws NullPointerException if {@code status} is null
     */
    public static Builder builder(Status status) {
        return new Builder(status);
    }

    /**
     * Where the dispatcher stands.
     *
     * @return the status; never null
     */
    public Status status() {
        return status;
    }

    /**
     * Whether the dispatcher publishes or can: false once {@link Status#CLOSED}, and false while it leads but cannot
     * reach its store ({@link #storeUnreachableSince()}) or its broker ({@link #outageSince()}) — a leader that
     * publishes nothing is not reported as up. A standby is up.
     *
     * @return false if closed, or leading without its store or broker; true otherwise
     */
    public boolean isUp() {
        return status != Status.CLOSED
                && !(status == Status.LEADER && (storeUnreachableSince != null || outageSince != null));
    }

    /**
     * While leading: since when the store's calls have failed (the first failed read, mark, epoch increment, purge,
     * retry or park after the last successful read), for example because the database is down or unreachable; empty
     * once a read succeeds, and on an instance that does not lead. Then {@link #isUp()} is false.
     *
     * @return when the failing began (dispatcher's clock), or empty
     */
    public Optional<Instant> storeUnreachableSince() {
        return Optional.ofNullable(storeUnreachableSince);
    }

    /**
     * While leading: how long ago, as of this snapshot, the harvest last read the store successfully (a read or mark
     * that found nothing counts; before the first one, the time since leadership began). An idle leader reads every
     * {@code pollInterval}, so this stays small; it grows while the database is down or the harvest is stuck (and
     * while in-flight records fill {@code maxInFlightRecords}, when reading waits). Empty on an instance that does
     * not lead.
     *
     * @return the time since the last successful read, zero or more, or empty
     */
    public Optional<Duration> sinceLastRead() {
        return Optional.ofNullable(sinceLastRead);
    }

    /**
     * The current leader id while leading; empty otherwise.
     *
     * @return the leader id; present whenever the status is {@link Status#LEADER}
     */
    public Optional<UUID> leaderId() {
        return Optional.ofNullable(leaderId);
    }

    /**
     * When this dispatcher last marked rows successfully (a mark that found nothing counts), if ever.
     *
     * @return the time (dispatcher's clock), or empty if it never did
     */
    public Optional<Instant> lastMark() {
        return Optional.ofNullable(lastMark);
    }

    /**
     * When this dispatcher last purged acknowledged rows successfully, if ever.
     *
     * @return the time (dispatcher's clock), or empty if it never did
     */
    public Optional<Instant> lastPurge() {
        return Optional.ofNullable(lastPurge);
    }

    /**
     * The last failed operation and when, if any failed since the dispatcher started.
     *
     * @return the failure, or empty
     */
    public Optional<Failure> lastFailure() {
        return Optional.ofNullable(lastFailure);
    }

    /**
     * The last {@linkplain DispatcherObserver#sampled sample} of the outbox taken while this instance leads;
     * empty on a standby (only the leader samples) and until the first sample, {@code metricsInterval} after
     * leadership was acquired.
     *
     * @return the sample, or empty
     */
    public Optional<OutboxSample> lastSample() {
        return Optional.ofNullable(lastSample);
    }

    /**
     * The lag — the age of the oldest unpublished row — as of the {@linkplain #lastSample() last sample}.
     *
     * @return the lag, or empty when there is no sample
     */
    public Optional<Duration> lag() {
        return lastSample == null ? Optional.empty() : Optional.of(lastSample.lag());
    }

    /**
     * Records sent to the broker and not yet completed.
     *
     * @return the count, 0 or more
     */
    public int inFlightRecords() {
        return inFlightRecords;
    }

    /**
     * Exceptions thrown by listener and observer callbacks since the dispatcher was built (each was ignored).
     *
     * @return the count, 0 or more
     */
    public long callbackErrors() {
        return callbackErrors;
    }

    /**
     * When the broker outage under way began: a delivery failed because the broker was unavailable for every
     * record ({@link dev.outbox.spi.DeliveryException#isOutage()}) and none was acknowledged since. Empty when no
     * outage is under way. An outage holds every failing key without counting attempts or parking: alert on how
     * long it lasts.
     *
     * @return the outage's start (dispatcher's clock), or empty
     */
    public Optional<Instant> outageSince() {
        return Optional.ofNullable(outageSince);
    }

    /**
     * Records held because the store refused their purge, park or failure record with an error a retry cannot cure
     * (a permission, a constraint; {@link dev.outbox.spi.StoreException#isRetriable()} false): their rows stay in
     * the table, their keys wait, and the write is tried again with backoff (up to {@code maxIoErrorBackoff}) until
     * an operator removes the cause; every other key goes on. {@link #lastFailure()} names the error when it began.
     * Zero normally: alert when it is not.
     *
     * @return the count, 0 or more
     */
    public int heldRecords() {
        return heldRecords;
    }

    /**
     * Keys held after a park ({@code DispatcherConfig.afterPark(HOLD_KEY)}): keys with a row in the parked table,
     * whose later records the leader does not send until an operator replays or discards the parked rows. Always
     * zero with {@code MOVE_ON} (the default) and on an instance that does not lead. Alert when it is not zero: the
     * consumers of those keys wait for a human.
     *
     * @return the count, 0 or more
     */
    public int heldKeys() {
        return heldKeys;
    }

    @Override
    public String toString() {
        return "DispatcherHealth{status=" + status + ", leaderId=" + leaderId + ", lastMark=" + lastMark
                + ", lastPurge=" + lastPurge + ", lastFailure=" + lastFailure + ", lastSample=" + lastSample
                + ", inFlightRecords=" + inFlightRecords + ", callbackErrors=" + callbackErrors
                + (outageSince == null ? "" : ", outageSince=" + outageSince)
                + (heldRecords == 0 ? "" : ", heldRecords=" + heldRecords)
                + (heldKeys == 0 ? "" : ", heldKeys=" + heldKeys)
                + (storeUnreachableSince == null ? "" : ", storeUnreachableSince=" + storeUnreachableSince)
                + (sinceLastRead == null ? "" : ", sinceLastRead=" + sinceLastRead) + '}';
    }

    /** Builds a {@link DispatcherHealth}; not thread-safe. Every value but the status is optional. */
    public static final class Builder {
        private final Status status;
        private UUID leaderId;
        private Instant lastMark;
        private Instant lastPurge;
        private Failure lastFailure;
        private OutboxSample lastSample;
        private int inFlightRecords;
        private long callbackErrors;
        private Instant outageSince;
        private int heldRecords;
        private int heldKeys;
        private Instant storeUnreachableSince;
        private Duration sinceLastRead;

        private Builder(Status status) {
            this.status = Objects.requireNonNull(status, "status");
        }

        /**
         * Sets {@link DispatcherHealth#leaderId()}.
         *
         * @param value the leader id, or null (the default) when not leading
         * @return this builder
         */
        public Builder leaderId(UUID value) {
            this.leaderId = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#lastMark()}.
         *
         * @param value the time of the last successful mark, or null (the default) for never
         * @return this builder
         */
        public Builder lastMark(Instant value) {
            this.lastMark = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#lastPurge()}.
         *
         * @param value the time of the last successful purge, or null (the default) for never
         * @return this builder
         */
        public Builder lastPurge(Instant value) {
            this.lastPurge = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#lastFailure()}.
         *
         * @param value the last failure, or null (the default) for none
         * @return this builder
         */
        public Builder lastFailure(Failure value) {
            this.lastFailure = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#lastSample()}.
         *
         * @param value the leader's last sample, or null (the default) for none
         * @return this builder
         */
        public Builder lastSample(OutboxSample value) {
            this.lastSample = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#inFlightRecords()}; default 0.
         *
         * @param value the count, 0 or more
         * @return this builder
         * @throws IllegalArgumentException if {@code value} is negative
         */
        public Builder inFlightRecords(int value) {
            if (value < 0) {
                throw new IllegalArgumentException("inFlightRecords must not be negative, was " + value);
            }
            this.inFlightRecords = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#callbackErrors()}; default 0.
         *
         * @param value the count, 0 or more
         * @return this builder
         * @throws IllegalArgumentException if {@code value} is negative
         */
        public Builder callbackErrors(long value) {
            if (value < 0) {
                throw new IllegalArgumentException("callbackErrors must not be negative, was " + value);
            }
            this.callbackErrors = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#outageSince()}.
         *
         * @param value the start of the broker outage under way, or null (the default) for none
         * @return this builder
         */
        public Builder outageSince(Instant value) {
            this.outageSince = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#heldRecords()}; default 0.
         *
         * @param value the count, 0 or more
         * @return this builder
         * @throws IllegalArgumentException if {@code value} is negative
         */
        public Builder heldRecords(int value) {
            if (value < 0) {
                throw new IllegalArgumentException("heldRecords must not be negative, was " + value);
            }
            this.heldRecords = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#heldKeys()}; default 0.
         *
         * @param value the count, 0 or more
         * @return this builder
         * @throws IllegalArgumentException if {@code value} is negative
         */
        public Builder heldKeys(int value) {
            if (value < 0) {
                throw new IllegalArgumentException("heldKeys must not be negative, was " + value);
            }
            this.heldKeys = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#storeUnreachableSince()}.
         *
         * @param value since when the leader's reads of the store have failed, or null (the default) for not failing
         * @return this builder
         */
        public Builder storeUnreachableSince(Instant value) {
            this.storeUnreachableSince = value;
            return this;
        }

        /**
         * Sets {@link DispatcherHealth#sinceLastRead()}.
         *
         * @param value the time since the leader's last successful read, zero or more, or null (the default) for none
         * @return this builder
         * @throws IllegalArgumentException if {@code value} is negative
         */
        public Builder sinceLastRead(Duration value) {
            if (value != null && value.isNegative()) {
                throw new IllegalArgumentException("sinceLastRead must not be negative, was " + value);
            }
            this.sinceLastRead = value;
            return this;
        }

        /**
         * The snapshot of the values set so far.
         *
         * @return a new, immutable snapshot
         * @throws IllegalArgumentException if the status is {@link Status#LEADER} and no leader id was set
         */
        public DispatcherHealth build() {
            return new DispatcherHealth(this);
        }
    }
}
