package dev.outbox.broker.kafka;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Leadership events of several contenders in the order they happened (appended under one lock, each stamped
 * with {@link System#nanoTime()}). Thread-safe.
 */
final class NeliTimeline {
    enum Kind { ACQUIRED, FENCED, REVOKED, STOPPED }

    record Event(long nanos, String who, Kind kind, UUID leaderId) {
    }

    private final long origin = System.nanoTime();
    private final List<Event> events = new ArrayList<>();

    synchronized void add(String who, Kind kind, UUID leaderId) {
        events.add(new Event(System.nanoTime(), who, kind, leaderId));
    }

    synchronized List<Event> events() {
        return List.copyOf(events);
    }

    /** The first event after {@code afterNanos} matching {@code p}, or null. */
    synchronized Event first(long afterNanos, Predicate<Event> p) {
        for (Event e : events) {
            if (e.nanos() - afterNanos >= 0 && p.test(e)) {
                return e;
            }
        }
        return null;
    }

    /**
     * Asserts that leadership intervals never overlapped: no contender acquired while another was leading (an
     * interval ends with FENCED, REVOKED or STOPPED), and no leader id was used twice.
     */
    synchronized void assertExclusive() {
        Set<String> leading = new HashSet<>();
        Set<UUID> ids = new HashSet<>();
        for (Event e : events) {
            switch (e.kind()) {
                case ACQUIRED -> {
                    if (!leading.isEmpty()) {
                        throw new AssertionError(e.who() + " acquired while " + leading + " led:\n" + this);
                    }
                    if (!ids.add(e.leaderId())) {
                        throw new AssertionError("leader id " + e.leaderId() + " reused:\n" + this);
                    }
                    leading.add(e.who());
                }
                case FENCED, REVOKED, STOPPED -> leading.remove(e.who());
            }
        }
    }

    long millisSinceOrigin(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos - origin);
    }

    @Override
    public synchronized String toString() {
        StringBuilder sb = new StringBuilder();
        for (Event e : events) {
            sb.append(String.format("  %6d ms  %-4s %s%s%n", millisSinceOrigin(e.nanos()), e.who(), e.kind(),
                    e.leaderId() == null ? "" : " " + e.leaderId()));
        }
        return sb.toString();
    }
}
