package dev.outbox.internal;

import dev.outbox.OutboxRecord;

/** A record in flight: sent (or about to be), its outcome not processed yet. Guarded like the schedule. */
public final class Flight {
    private final OutboxRecord record;
    private final long sentAtNanos;
    /** Its key's state, whose flight it is until it settles (a key in flight stays in the schedule's map). */
    final KeySchedule.KeyState state;
    private boolean reportedStuck;
    /** The id of a newer record of its topic and key queued behind this latest-only one; 0 if none. */
    private final long supersededBy;

    Flight(OutboxRecord record, long sentAtNanos, KeySchedule.KeyState state) {
        this(record, sentAtNanos, state, 0);
    }

    Flight(OutboxRecord record, long sentAtNanos, KeySchedule.KeyState state, long supersededBy) {
        this.record = record;
        this.sentAtNanos = sentAtNanos;
        this.state = state;
        this.supersededBy = supersededBy;
    }

    /**
     * Whether this latest-only record is not to be sent: a newer record of its topic and key was queued behind it
     * when it was taken. It settles as acknowledged (its row is purged) without a send.
     */
    public boolean superseded() {
        return supersededBy != 0;
    }

    /** The id of the newer record that superseded it; 0 if it is not {@link #superseded()}. */
    public long supersededBy() {
        return supersededBy;
    }

    /** The record in flight. */
    public OutboxRecord record() {
        return record;
    }

    /** When it was taken for sending, by {@link System#nanoTime()} (or the caller's equivalent). */
    public long sentAtNanos() {
        return sentAtNanos;
    }

    /** Whether it was reported as unacknowledged for too long; see {@link #markReportedStuck()}. */
    public boolean reportedStuck() {
        return reportedStuck;
    }

    /** Remembers that the dispatcher reported this flight as stuck, so that it reports it once. */
    public void markReportedStuck() {
        reportedStuck = true;
    }

    /**
     * For a latest-only record, the id of the first newer record of its topic queued behind it (its key's queue holds
     * only later records); 0 if the record is not latest only or none is queued.
     */
    static long newerOfTopic(OutboxRecord r, Iterable<OutboxRecord> behind) {
        if (!r.message().isLatestOnly()) {
            return 0;
        }
        for (OutboxRecord later : behind) {
            if (later.topic().equals(r.topic())) {
                return later.id();
            }
        }
        return 0;
    }

    @Override
    public String toString() {
        return "Flight{" + record.id() + ", key " + dev.outbox.spi.Excerpt.of(record.key()) + '}';
    }
}
