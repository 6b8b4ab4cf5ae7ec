package dev.outbox.sidecar;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.MeterReading;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Store;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * One outbox the sidecar harvests: its pool, store, dispatcher, and what the console shows of it (rate, how long it
 * has been fenced). Thread-safe.
 */
public final class SidecarOutbox {
    private final String name;
    private final HikariDataSource pool;
    private final Store store;
    private final ParkedRecords parked;
    private final Dispatcher dispatcher;
    private final Status status;

    SidecarOutbox(String name, HikariDataSource pool, Store store, Dispatcher dispatcher, Status status) {
        this.name = Objects.requireNonNull(name, "name");
        this.pool = Objects.requireNonNull(pool, "pool");
        this.store = Objects.requireNonNull(store, "store");
        this.parked = (ParkedRecords) store;
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
        this.status = Objects.requireNonNull(status, "status");
    }

    /**
     * The outbox's name in the configuration file.
     *
     * @return the {@code <name>} of {@code sidecar.outboxes.<name>}, as in the operator API's URLs and the metrics'
     *         {@code outbox} tag
     */
    public String name() {
        return name;
    }

    /**
     * The outbox's store.
     *
     * @return the store (a {@code PostgresStore} or {@code MySqlStore}) over this outbox's own pool
     */
    public Store store() {
        return store;
    }

    /**
     * The operator's view of the store's parked rows.
     *
     * @return the same object as {@link #store()}, seen as {@link ParkedRecords}
     */
    public ParkedRecords parked() {
        return parked;
    }

    /**
     * The outbox's dispatcher.
     *
     * @return the dispatcher, run by the sidecar's lifecycle; do not start or close it
     */
    public Dispatcher dispatcher() {
        return dispatcher;
    }

    /**
     * The dispatcher's health (no I/O).
     *
     * @return a snapshot of {@link Dispatcher#health()}
     */
    public DispatcherHealth health() {
        return dispatcher.health();
    }

    /**
     * Records acknowledged per second over the last metrics interval; empty before the first reading.
     *
     * @return the rate in records per second, or empty before the first reading
     */
    public Optional<Double> rate() {
        return status.rate();
    }

    /**
     * How long the dispatcher has been fenced, or empty when it is not.
     *
     * @return the time since it was fenced, by the sidecar's clock; empty unless its status is FENCED
     */
    public Optional<Duration> fencedFor() {
        return health().status() == DispatcherHealth.Status.FENCED ? status.fencedFor() : Optional.empty();
    }

    void closePool() {
        pool.close();
    }

    /** Follows the dispatcher's events: fenced since when, the last throughput reading. Thread-safe. */
    static final class Status implements DispatcherListener {
        private final Clock clock;
        private volatile Instant fencedSince;
        private volatile Double rate;

        Status(Clock clock) {
            this.clock = clock;
        }

        @Override
        public void leaderAcquired(UUID leaderId) {
            fencedSince = null;
        }

        @Override
        public void leaderRefreshed(UUID leaderId) {
            fencedSince = null;
        }

        @Override
        public void leaderRevoked() {
            fencedSince = null;
        }

        @Override
        public void leaderFenced() {
            if (fencedSince == null) {
                fencedSince = clock.instant();
            }
        }

        @Override
        public void meterRead(MeterReading reading) {
            rate = reading.ratePerSecond();
        }

        Optional<Double> rate() {
            return Optional.ofNullable(rate);
        }

        Optional<Duration> fencedFor() {
            Instant since = fencedSince;
            if (since == null) {
                // Fenced without the event (it is reported after the state changes): count from now on.
                fencedSince = clock.instant();
                return Optional.of(Duration.ZERO);
            }
            return Optional.of(Duration.between(since, clock.instant()));
        }
    }
}
