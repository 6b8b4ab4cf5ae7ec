package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

import java.util.Objects;

/**
 * The dispatcher's health for Spring Boot Actuator ({@code /actuator/health/outbox}), from
 * {@link Dispatcher#health()}: UP while it leads or stands by, UNKNOWN while starting, DOWN while fenced (it lost
 * contact with Kafka and stopped publishing), OUT_OF_SERVICE once closed. Details: status, leader id, last mark and
 * purge, last failure, in-flight records, and the leader's last sample of the outbox (backlog, parked rows, lag).
 * Reading it costs no I/O. Thread-safe.
 */
public final class OutboxHealthIndicator implements HealthIndicator {
    private final Dispatcher dispatcher;

    public OutboxHealthIndicator(Dispatcher dispatcher) {
        this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
    }

    @Override
    public Health health() {
        DispatcherHealth h = dispatcher.health();
        Health.Builder b = switch (h.status()) {
            case LEADER, STANDBY -> Health.up();
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
        b.withDetail("inFlightRecords", h.inFlightRecords());
        if (h.heldRecords() > 0) { // the store refuses their purge or park for good: a human must act
            b.withDetail("heldRecords", h.heldRecords());
        }
        h.lastSample().ifPresent(s -> {
            b.withDetail("backlog", s.backlog());
            b.withDetail("parked", s.parked());
            s.retained().ifPresent(bytes -> b.withDetail("retainedBytes", bytes)); // WAL harvest: the slot's WAL
            b.withDetail("sampledAt", s.at().toString());
        });
        h.lag().ifPresent(lag -> b.withDetail("lag", lag.toString()));
        return b.build();
    }
}
