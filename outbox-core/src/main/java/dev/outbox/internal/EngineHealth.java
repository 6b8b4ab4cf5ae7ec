package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxSample;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;

/**
 * What a dispatcher reports about itself ({@link Dispatcher#health()}): the one owner of the figures health is made
 * of — the leader id as reported, whether the election was joined and whether the instance is fenced, the last
 * successful mark (or read) and purge, the last failure, since when the broker has been unavailable, the last sample
 * — and of the status last told to the observers; since when the harvest's reads of the store have failed, and when
 * this leadership began (for the time since the last read). The engine's threads tell it what happened; it keeps
 * no lock and decides nothing about leading.
 *
 * <p>Thread-safe: every figure is written by one engine thread and read by any; the outage's warning time is written
 * by the settle thread only.
 */
final class EngineHealth {
    /** How often an outage under way is said again at WARN (between, at DEBUG). */
    static final Duration OUTAGE_WARNING_INTERVAL = Duration.ofMinutes(1);

    private volatile UUID leaderId;
    private volatile boolean electionJoined;
    private volatile boolean fenced;
    private volatile Instant lastMark;
    private volatile Instant lastPurge;
    private volatile DispatcherHealth.Failure lastFailure;
    private volatile Instant outageSince;
    /** When an outage was last said at WARN; the settle thread's. */
    private Instant lastOutageWarning;
    private volatile OutboxSample lastSample;
    private volatile DispatcherHealth.Status reported = DispatcherHealth.Status.STARTING;
    private volatile Instant storeUnreachableSince;
    private volatile Instant leadingSince;
    private final Clock clock;

    EngineHealth(Clock clock) {
        this.clock = clock;
    }

    // ------------------------------------------------------------------------------------------ leadership

    /** The election answered once: a non-leader is a standby from now on. */
    void electionJoined() {
        electionJoined = true;
    }

    /** This instance leads under {@code id} (a new leadership, or a fresh id within one). */
    void leading(UUID id) {
        if (leaderId == null) {
            leadingSince = clock.instant();
            storeUnreachableSince = null;
        }
        leaderId = id;
        fenced = false;
    }

    /** Leadership ended: no leader id, and the last sample was not this instance's any more. */
    void notLeading() {
        leaderId = null;
        lastSample = null;
    }

    /** The instance fenced itself ({@code true}) or its leadership ended in order ({@code false}). */
    void fenced(boolean fenced) {
        this.fenced = fenced;
    }

    /**
     * A fenced instance is no longer assigned the leadership: it stands by. Called by the leader thread.
     *
     * @return whether it was fenced
     */
    boolean unfenced() {
        if (!fenced) {
            return false;
        }
        fenced = false;
        return true;
    }

    /** The leader id as health reports it, or null. */
    UUID leaderId() {
        return leaderId;
    }

    // ------------------------------------------------------------------------------------------ progress

    /** A read or mark succeeded at {@code at}: the store answers again, if it did not. */
    void marked(Instant at) {
        lastMark = at;
        storeUnreachableSince = null;
    }

    /** A read, mark or epoch increment failed at {@code at}: the store is unreachable since then, if not already. */
    void readFailed(Instant at) {
        if (storeUnreachableSince == null) {
            storeUnreachableSince = at;
        }
    }

    void purged(Instant at) {
        lastPurge = at;
    }

    void failed(String operation, String description, Instant at) {
        lastFailure = new DispatcherHealth.Failure(operation, description, at);
    }

    void sampled(OutboxSample sample) {
        lastSample = sample;
    }

    /**
     * An outage began at {@code now} (the schedule says so); the settle thread's.
     *
     * @return whether to say so at WARN (the first time, then at most once per {@link #OUTAGE_WARNING_INTERVAL})
     */
    boolean outageBegan(Instant now) {
        outageSince = now;
        boolean warn = lastOutageWarning == null || !now.isBefore(lastOutageWarning.plus(OUTAGE_WARNING_INTERVAL));
        if (warn) {
            lastOutageWarning = now;
        }
        return warn;
    }

    /** An acknowledgement ended the outage, if one was under way: returns when it began, or null. */
    Instant outageEnded() {
        Instant began = outageSince;
        if (began != null) {
            outageSince = null;
        }
        return began;
    }

    // ------------------------------------------------------------------------------------------ reports

    /** The status of a dispatcher in {@code state}. */
    DispatcherHealth.Status status(Dispatcher.State state) {
        return status(state, leaderId);
    }

    private DispatcherHealth.Status status(Dispatcher.State state, UUID leaderId) {
        return switch (state) {
            case NEW -> DispatcherHealth.Status.STARTING;
            case CLOSING, CLOSED -> DispatcherHealth.Status.CLOSED;
            case RUNNING -> leaderId != null ? DispatcherHealth.Status.LEADER
                    : fenced ? DispatcherHealth.Status.FENCED
                    : electionJoined ? DispatcherHealth.Status.STANDBY
                    : DispatcherHealth.Status.STARTING;
        };
    }

    /**
     * The status if it changed since the last call, else null. Called by one thread at a time (the leader thread,
     * and close once that thread has ended).
     */
    DispatcherHealth.Status changedStatus(Dispatcher.State state) {
        DispatcherHealth.Status now = status(state);
        if (now == reported) {
            return null;
        }
        reported = now;
        return now;
    }

    /** The health report; the leader's figures only while leading. */
    DispatcherHealth report(Dispatcher.State state, int inFlightRecords, long callbackErrors, int heldRecords,
                            int heldKeys) {
        UUID leader = leaderId; // one reading: the status and the id agree
        DispatcherHealth.Status status = status(state, leader);
        boolean leading = status == DispatcherHealth.Status.LEADER;
        Duration sinceLastRead = null;
        if (leading) {
            Instant since = lastMark;
            Instant began = leadingSince;
            if (since == null || began != null && began.isAfter(since)) {
                since = began;
            }
            if (since != null) {
                Duration d = Duration.between(since, clock.instant());
                sinceLastRead = d.isNegative() ? Duration.ZERO : d;
            }
        }
        return DispatcherHealth.builder(status)
                .leaderId(leading ? leader : null)
                .lastMark(lastMark)
                .lastPurge(lastPurge)
                .lastFailure(lastFailure)
                .lastSample(leading ? lastSample : null)
                .inFlightRecords(inFlightRecords)
                .callbackErrors(callbackErrors)
                .outageSince(leading ? outageSince : null)
                .heldRecords(heldRecords)
                .heldKeys(leading ? heldKeys : 0)
                .storeUnreachableSince(leading ? storeUnreachableSince : null)
                .sinceLastRead(sinceLastRead)
                .build();
    }
}
