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

    /**
     * One event: when ({@link System#nanoTime()}), who, what, and the leader id where there is one.
     *
     * @param nanos    when it was added, as {@link System#nanoTime()} (compare by difference, not by value)
     * @param who      the contender's name, as the test gave it
     * @param kind     what happened
     * @param leaderId the fresh leader id of {@link Kind#ACQUIRED} and {@link Kind#REFRESHED}; else usually
     *                 {@code null}
     */
    public record Event(long nanos, String who, Kind kind, UUID leaderId) {
    }

    private final long origin = System.nanoTime();
    private final List<Event> events = new ArrayList<>();

    /**
     * Appends an event stamped now.
     *
     * @param who      the contender's name (any text the test chooses, the same for all its events)
     * @param kind     what happened
     * @param leaderId the leader id taken with {@link Kind#ACQUIRED} or {@link Kind#REFRESHED}; {@code null} for
     *                 the other kinds
     */
    public synchronized void add(String who, Kind kind, UUID leaderId) {
        events.add(new Event(System.nanoTime(), who, kind, leaderId));
    }

    /**
     * A listener recording the leadership events of the dispatcher named {@code who}: acquired, refreshed,
     * fenced and revoked. Closing a dispatcher emits none of them: record {@link Kind#STOPPED} before closing.
     *
     * @param who the dispatcher's name in the timeline
     * @return a new listener for that one dispatcher ({@code Dispatcher.Builder.listener}); thread-safe
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

    /**
     * A copy of the events so far, in order.
     *
     * @return an immutable snapshot, in the order the events were added
     */
    public synchronized List<Event> events() {
        return List.copyOf(events);
    }

    /**
     * The first event stamped at or after {@code afterNanos} that matches {@code p}, or null.
     *
     * @param afterNanos a {@link System#nanoTime()} value, for example taken just before a fault was injected
     * @param p          which events qualify; called under the timeline's lock, so it must not add events
     * @return the earliest such event, or {@code null} if none
     */
    public synchronized Event first(long afterNanos, Predicate<Event> p) {
        for (Event e : events) {
            if (e.nanos() - afterNanos >= 0 && p.test(e)) {
                return e;
            }
        }
        return null;
    }

    /**
     * How many events match {@code p}.
     *
     * @param p which events to count; called under the timeline's lock, so it must not add events
     * @return the number of matching events so far
     */
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

    /**
     * Milliseconds from this timeline's creation to {@code nanos}.
     *
     * @param nanos a {@link System#nanoTime()} value, such as an {@link Event#nanos()}
     * @return the whole milliseconds elapsed, truncated; negative for a time before the creation
     */
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
