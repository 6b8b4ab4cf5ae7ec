package dev.outbox.internal;

import java.util.UUID;

/**
 * This instance's leadership as the harvest sees it: the leader id it marks and sends under, the epoch that every
 * decision taken under the lock is checked against, how many leaderships it has held, and the fenced states. The one
 * owner of that state; pure (no clock, no thread, no I/O), driven by {@link EngineState}, which holds the lock and
 * rewinds the harvest at each transition that says so.
 *
 * <p><b>Epoch</b> here is the engine's own counter, raised by every change after which what was decided before must
 * not be carried out (a new leadership, a stop, a fresh leader id); it is not the database's leader epoch that storage
 * fencing takes ({@link StoreWrites}).
 *
 * <p>Not thread-safe: guarded by {@link EngineState}'s lock.
 */
final class Leadership {
    private UUID leaderId;
    private long epoch;
    private long leaderships;
    /**
     * A write was refused as fenced since the database epoch was taken, or a send was refused by a fenced broker:
     * stand down, then (with a fencing store) take a new database epoch.
     */
    private boolean epochLost;
    /** The leadership in which {@link #epochLost} was last raised by a fenced broker. */
    private long brokerFencedIn;
    /** What was marked under the leader id may be out of step with the schedule: take a fresh id before marking. */
    private boolean remark;

    /** A new leadership under {@code id}. */
    void acquired(UUID id) {
        leaderId = id;
        epoch++;
        leaderships++;
        remark = false;
    }

    /**
     * Leadership ended (revoked, fenced or closing).
     *
     * @return whether this instance was leading
     */
    boolean stopped() {
        boolean was = leaderId != null;
        leaderId = null;
        epoch++;
        return was;
    }

    /** A fresh leader id within the same leadership: every unacknowledged row is marked again. */
    void refreshed(UUID fresh) {
        leaderId = fresh;
        epoch++;
        remark = false;
    }

    /**
     * A write or a send was refused as fenced.
     *
     * @return whether the epoch was held until now (the first refusal of this loss)
     */
    boolean lost(boolean byBroker) {
        boolean first = !epochLost;
        epochLost = true;
        if (byBroker) {
            brokerFencedIn = leaderships;
        }
        remark = leaderId != null;
        return first;
    }

    /** The harvest rewinds under a fresh leader id before it marks again (a failed mark, a lapsed lease). */
    void remark() {
        remark = true;
    }

    /** The stand-down after a loss is over (a new database epoch was taken, or the broker is asked again). */
    void regained() {
        epochLost = false;
    }

    UUID leaderId() {
        return leaderId;
    }

    boolean leading() {
        return leaderId != null;
    }

    long epoch() {
        return epoch;
    }

    long leaderships() {
        return leaderships;
    }

    boolean epochLost() {
        return epochLost;
    }

    /** Whether the last loss by a fenced broker was in the current leadership. */
    boolean brokerFencedNow() {
        return brokerFencedIn == leaderships;
    }

    boolean remarkNeeded() {
        return remark;
    }

    @Override
    public String toString() {
        return (leaderId != null) + "/" + epoch + "/" + remark;
    }
}
