package dev.outbox.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A {@link Store} capability: the figures the leader samples every {@code metricsInterval} for health and meters
 * ({@link dev.outbox.OutboxSample}). Each is cheap; none is used for correctness.
 */
public interface Gauges {

    /**
     * The number of rows waiting in the outbox (harvested or not, excluding parked rows). May be an estimate on
     * large tables.
     *
     * @return the backlog
     */
    long backlog();

    /**
     * The number of rows in the parked area. May be an estimate on large tables.
     *
     * @return the number of parked rows
     */
    long parkedCount();

    /**
     * The creation time of the head of the outbox: the unparked row with the lowest id — harvested or not — which
     * is the next the dispatcher publishes; empty when the outbox has no row. The leader reports the lag (the age of
     * the oldest unpublished row) from it, so it must be cheap: one indexed lookup, never a scan of the table.
     *
     * @return the head's creation time, or empty
     */
    Optional<Instant> oldestCreateTime();

    /**
     * The age of the head of the outbox ({@link #oldestCreateTime()}'s row) measured by the database's own clock:
     * its time now minus the row's creation time, so that the lag grows while the database is up, whatever this
     * host's clock says; zero or more, empty when the outbox has no row. The default, for a store without a clock
     * of its own, is empty: the dispatcher then measures the age by its own clock. Cheap, like
     * {@link #oldestCreateTime()}.
     *
     * @return the head's age by the database's clock, or empty
     */
    default Optional<Duration> oldestAge() {
        return Optional.empty();
    }

    /**
     * The bytes the database keeps for this outbox's harvest that it could otherwise free (the write-ahead log a
     * replication slot retains), or empty for a store that keeps none. An abandoned slot fills the disk.
     *
     * @return the retained bytes, or empty
     */
    default OptionalLong retainedBytes() {
        return OptionalLong.empty();
    }
}
