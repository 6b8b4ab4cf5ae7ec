package dev.outbox.internal;

import java.time.Instant;

/**
 * What to do with a failed delivery.
 *
 * @param park          whether to park the record (too many attempts, or a permanent failure)
 * @param attempts      the record's failed deliveries, this one included
 * @param nextAttemptAt when to try again, null when parking
 * @param outage        the broker was unavailable for every record: the attempt is not counted
 */
public record Verdict(boolean park, int attempts, Instant nextAttemptAt, boolean outage) {
    /** A verdict on a failure of the record itself. */
    public Verdict(boolean park, int attempts, Instant nextAttemptAt) {
        this(park, attempts, nextAttemptAt, false);
    }
}
