package dev.outbox.testkit;

import dev.outbox.DispatcherListener;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The leadership events of several contenders (dispatchers, or bare NELI state machines) in the order they
 * happened, each stamped with {@link System#nanoTime()}, so that a test can assert the timeline — at most one
 * leader at any time, a fresh leader id on every acquisition — and measure take-over times.
 *
 * <pre>{@code
 * LeadershipTimeline timeline = new LeadershipTimeline();
 * Dispatcher d = Dispatcher.builder(store, broker).listener(timeline.listener("d1")).build();
 * ...
 * timeline.add("d1", LeadershipTimeline.Kind.STOPPED, null);   // before closing or killing a contender
 * d.close();
 * timeline.assertExclusive();
 * }</pre>
 *
 * <p>Thread-safe: events are appended under one lock.
 */
public final class LeadershipTimeline {

    /** What happened to a contender. */
    public enum Kind {
        /** It became the leader with a fresh leader id. */
        ACQUIRED,
        /** It stays the leader and took a fresh leader id (after a failed mark or a lapsed lease). */
        REFRESHED,
        /** It stopped publishing at once: its heartbeats stopped, or its group session was lost. */
        FENCED,
        /** Leadership was handed over in an orderly way. */
        REVOKED,
        /** The test closed or killed it; a leader ends its leadership here. */
        STOPPED
    }

    /** One event: when ({@link System#nanoTime()}), who, what, and the leader id where there is one. */
    public record Event(long nanos, String who, Kind kind, UUID leaderId) {
    }

    private final long origin = System.nanoTime();
    private final List<Event> events = new ArrayList<>();

    /** Appends an event stamped now. */
    public synchronized void add(String who, Kind kind, UUID leaderId) {
        events.add(new Event(System.nanoTime(), who, kind, leaderId));
    }

    /**
     * A listener recording the leadership events of the dispatcher named {@code who}: acquired, refreshed,
     * fenced and revoked. Closing a dispatcher emits none of them: record {@link Kind#STOPPED} before closing.
     */
    public DispatcherListener listener(String who) {
        return new DispatcherListener() {
            @Override
            public void leaderAcquired(UUID leaderId) {
                add(who, Kind.ACQUIRED, leaderId);
            }

            @Override
            public void leaderRefreshed(UUID leaderId) {
                add(who, Kind.REFRESHED, leaderId);
            }

            @Override
            public void leaderRevoked() {
                add(who, Kind.REVOKED, null);
            }

            @Override
            public void leaderFenced() {
                add(who, Kind.FENCED, null);
            }
        };
    }

    /** A copy of the events so far, in order. */
    public synchronized List<Event> events() {
        return List.copyOf(events);
    }

    /** The first event stamped at or after {@code afterNanos} that matches {@code p}, or null. */
    public synchronized Event first(long afterNanos, Predicate<Event> p) {
        for (Event e : events) {
            if (e.nanos() - afterNanos >= 0 && p.test(e)) {
                return e;
            }
        }
        return null;
    }

    /** How many events match {@code p}. */
    public synchronized int count(Predicate<Event> p) {
        int n = 0;
        for (Event e : events) {
            if (p.test(e)) {
                n++;
            }
        }
        return n;
    }

    /**
     * Asserts that leadership intervals never overlapped: no contender acquired while another led (a
     * leadership ends with {@link Kind#FENCED}, {@link Kind#REVOKED} or {@link Kind#STOPPED}), and no leader id
     * was used twice (acquired or refreshed).
     *
     * @throws AssertionError naming the offending event, with the whole timeline
     */
    public synchronized void assertExclusive() {
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
                case REFRESHED -> {
                    // Not checked against `leading`: a dispatcher may report a refresh just before the
                    // acquisition it follows (the two callbacks run on different threads).
                    if (!ids.add(e.leaderId())) {
                        throw new AssertionError("leader id " + e.leaderId() + " reused:\n" + this);
                    }
                }
                case FENCED, REVOKED, STOPPED -> leading.remove(e.who());
            }
        }
    }

    /** Milliseconds from this timeline's creation to {@code nanos}. */
    public long millisSinceOrigin(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos - origin);
    }

    @Override
    public synchronized String toString() {
        StringBuilder sb = new StringBuilder();
        for (Event e : events) {
            sb.append(String.format("  %6d ms  %-8s %s%s%n", millisSinceOrigin(e.nanos()), e.who(), e.kind(),
                    e.leaderId() == null ? "" : " " + e.leaderId()));
        }
        return sb.toString();
    }
}
