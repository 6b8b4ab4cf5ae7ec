package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxSample;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

import java.util.Objects;

/**
 * The dispatcher's health for Spring Boot Actuator ({@code /actuator/health/outbox}), from
 * {@link Dispatcher#health()}: UP while it leads or stands by, UNKNOWN while starting, DOWN while fenced (it lost
 * contact with Kafka and stopped publishing) and while it leads but cannot reach its database or its broker
 * ({@link DispatcherHealth#isUp()}: details {@code storeUnreachableSince} / {@code outageSince}), OUT_OF_SERVICE once
 * closed. Details: status, leader id, last mark and purge, the time since the last successful read, last failure,
 * in-flight records, and the leader's last sample of the outbox (backlog, parked rows, lag).
 * With the Postgres WAL harvest it is also DOWN while the replication slot holds back more write-ahead log than
 * {@code maxRetainedBytes} (default {@value #DEFAULT_MAX_RETAINED_BYTES} bytes, 1 GiB): a stuck or abandoned slot
 * fills the database's disk. Reading it costs no I/O. Thread-safe.
 */
public final class OutboxHealthIndicator implements HealthIndicator {
    /** The WAL a slot may hold back before the outbox is reported DOWN: 1 GiB. */
    public static final long DEFAULT_MAX_RETAINED_BYTES = 1L << 30;

    private final Dispatcher dispatcher;
    private final long maxRetainedBytes;

    /**
     * An indicator with the default WAL bound, {@value #DEFAULT_MAX_RETAINED_BYTES} bytes.
     *
     * @param dispatcher the dispatcher whose health is reported; not {@code null}
     * @throws NullPointerException if {@code dispatcher} is {@code null}
     */
    public OutboxHealthIndicator(Dispatcher dispatcher) {
        this(dispatcher, DEFAULT_MAX_RETAINED_BYTES);
    }

    /**
     * An indicator with its own WAL bound.
     *
     * @param dispatcher       the dispatcher whose health is reported; not {@code null}
     * @param maxRetainedBytes the write-ahead log the outbox's replication slot may hold back (WAL harvest) before
     *                         the indicator reports DOWN; positive
     * @throws NullPointerException     if {@code dispatcher} is {@code null}
     * @throws IllegalArgumentException if {@code maxRetainedBytes} is not positive
     */
    public OutboxHealthIndicator(Dispatcher dispatcher, long maxRetainedBytes) {
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
        if (maxRetainedBytes <= 0) {
            throw new IllegalArgumentException("maxRetainedBytes must be positive, was " + maxRetainedBytes);
        }
        this.maxRetainedBytes = maxRetainedBytes;
    }

    @Override
    public Health health() {
        DispatcherHealth h = dispatcher.health();
        Health.Builder b = switch (h.status()) {
            case LEADER -> h.isUp() ? Health.up() : Health.down(); // down: no store or no broker since ...
            case STANDBY -> Health.up();
            case STARTING -> Health.unknown();
            case FENCED -> Health.down();
            case CLOSED -> Health.status(Status.OUT_OF_SERVICE);
        };
        b.withDetail("status", h.status().name());
        h.leaderId().ifPresent(id -> b.withDetail("leaderId", id.toString()));
        h.lastMark().ifPresent(t -> b.withDetail("lastMark", t.toString()));
        h.lastPurge().ifPresent(t -> b.withDetail("lastPurge", t.toString()));
        h.lastFailure().ifPresent(f -> b.withDetail("lastFailure", f.operation() + " at " + f.at() + ": " + f.error()));
        h.outageSince().ifPresent(t -> b.withDetail("outageSince", t.toString())); // the broker fails every record
        h.storeUnreachableSince().ifPresent(t -> b.withDetail("storeUnreachableSince", t.toString()));
        h.sinceLastRead().ifPresent(d -> b.withDetail("sinceLastRead", d.toString()));
        b.withDetail("inFlightRecords", h.inFlightRecords());
        if (h.heldRecords() > 0) { // the store refuses their purge or park for good: a human must act
            b.withDetail("heldRecords", h.heldRecords());
        }
        if (h.heldKeys() > 0) { // afterPark HOLD_KEY: keys wait until their parked rows are replayed or discarded
            b.withDetail("heldKeys", h.heldKeys());
        }
        h.lastSample().ifPresent(s -> {
            b.withDetail("backlog", s.backlog());
            b.withDetail("parked", s.parked());
            s.retained().ifPresent(bytes -> b.withDetail("retainedBytes", bytes)); // WAL harvest: the slot's WAL
            b.withDetail("sampledAt", s.at().toString());
        });
        h.lag().ifPresent(lag -> b.withDetail("lag", lag.toString()));
        long retained = h.lastSample().map(OutboxSample::retainedBytes).orElse(-1L);
        if (retained > maxRetainedBytes && h.status() != DispatcherHealth.Status.CLOSED) {
            // The slot holds back more WAL than allowed: the database's disk is filling up.
            b.status(Status.DOWN).withDetail("retainedBytesLimit", maxRetainedBytes);
        }
        return b.build();
    }
}
