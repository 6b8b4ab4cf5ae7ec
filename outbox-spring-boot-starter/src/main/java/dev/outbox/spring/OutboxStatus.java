package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxSample;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.Gauges;
import org.jspecify.annotations.Nullable;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * One outbox's status as the {@link OutboxEndpoint} shows it. The figures (backlog, parked, lag) are read from the
 * store when asked ({@link Gauges}, cheap by contract), or, if that read fails or the store is a {@link CommitLog}
 * (whose backlog is what the dispatcher's stream harvest holds), taken from the leader's last sample
 * ({@code measuredAt} tells which). Immutable.
 *
 * @param status          the dispatcher's status on this instance: {@code LEADER}, {@code STANDBY}, {@code FENCED},
 *                        {@code STARTING} or {@code CLOSED} ({@link DispatcherHealth.Status}), or {@code DISABLED}
 *                        where this instance runs no dispatcher ({@code outbox.dispatcher.enabled=false})
 * @param leaderId        this instance's leader id while it leads, or {@code null}
 * @param shards          each shard's status, by shard index, for a sharded outbox; {@code null} for one shard
 * @param backlog         records waiting in the outbox (not parked), or {@code null} if not known
 * @param parked          records in the parked area, or {@code null} if not known
 * @param lag             the age of the oldest record waiting (ISO-8601 duration, {@code PT0S} when the outbox is
 *                        empty), or {@code null} if not known
 * @param measuredAt      when the figures were read (ISO-8601), or {@code null} if there are none
 * @param inFlightRecords records sent to the broker and not yet acknowledged, by this instance
 * @param heldKeys        keys held behind a parked record ({@code after-park=hold-key}) until it is replayed or
 *                        discarded
 * @param lastFailure     the dispatcher's last failed operation ({@code <operation> at <instant>: <error>}), or
 *                        {@code null}
 * @param measureFailure  why the store could not be read just now, or {@code null}
 */
public record OutboxStatus(String status, @Nullable String leaderId, @Nullable List<String> shards,
                           @Nullable Long backlog, @Nullable Long parked, @Nullable String lag,
                           @Nullable String measuredAt, int inFlightRecords, int heldKeys,
                           @Nullable String lastFailure, @Nullable String measureFailure) {
    /** The status of an outbox with no dispatcher on this instance. */
    public static final String DISABLED = "DISABLED";

    static OutboxStatus of(OutboxEndpoint.Outbox outbox, Clock clock) {
        Dispatcher d = outbox.dispatcher();
        DispatcherHealth h = d == null ? null : d.health();
        Figures figures;
        String measureFailure = null;
        try {
            // A commit log's backlog is what the dispatcher's stream harvest holds: its last sample, not the store.
            figures = outbox.store().capability(CommitLog.class).isPresent() ? null
                    : outbox.store().capability(Gauges.class).map(g -> Figures.read(g, clock)).orElse(null);
        } catch (RuntimeException e) {
            figures = null;
            measureFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        if (figures == null && h != null) {
            figures = h.lastSample().map(Figures::of).orElse(null);
        }
        List<String> shards = null;
        if (d != null && d.shardHealth().size() > 1) {
            shards = d.shardHealth().stream().map(s -> s.status().name()).toList();
        }
        return new OutboxStatus(h == null ? DISABLED : h.status().name(),
                h == null ? null : h.leaderId().map(Object::toString).orElse(null),
                shards,
                figures == null ? null : figures.backlog(),
                figures == null ? null : figures.parked(),
                figures == null ? null : figures.lag().toString(),
                figures == null ? null : figures.at().toString(),
                h == null ? 0 : h.inFlightRecords(),
                h == null ? 0 : h.heldKeys(),
                h == null ? null : h.lastFailure().map(f -> f.operation() + " at " + f.at() + ": " + f.error())
                        .orElse(null),
                measureFailure);
    }

    /** Backlog, parked rows and lag at one instant. */
    private record Figures(Instant at, long backlog, long parked, Duration lag) {
        static Figures read(Gauges g, Clock clock) {
            long backlog = g.backlog();
            long parked = g.parkedCount();
            Optional<Instant> oldest = g.oldestCreateTime();
            Instant now = clock.instant();
            return new Figures(now, backlog, parked, lag(oldest.orElse(null), now));
        }

        static Figures of(OutboxSample s) {
            return new Figures(s.at(), s.backlog(), s.parked(), s.lag());
        }

        private static Duration lag(@Nullable Instant oldest, Instant now) {
            if (oldest == null || oldest.isAfter(now)) {
                return Duration.ZERO;
            }
            return Duration.between(oldest, now);
        }
    }
}
