package dev.outbox.spi;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;

/**
 * The commit wake-ups subscribed to a store that learns of commits in its own process (see
 * {@link CommitSignals#watchCommits}): {@link #watch} subscribes one, {@link #wakeAll} calls every one. For store
 * implementations. Thread-safe.
 */
public final class CommitWatchers {
    private static final Logger log = LoggerFactory.getLogger(CommitWatchers.class);

    private final Set<Runnable> wakeUps = new CopyOnWriteArraySet<>();

    /**
     * Subscribes {@code wakeUp} until the returned watch is closed; it listens for as long as it is subscribed.
     *
     * @param wakeUp run by {@link #wakeAll()}; not null. A wake-up subscribed twice is held once
     * @return the watch; closing it unsubscribes {@code wakeUp}
     * @throws NullPointerException if {@code wakeUp} is null
     */
    public CommitSignals.CommitWatch watch(Runnable wakeUp) {
        Objects.requireNonNull(wakeUp, "wakeUp");
        wakeUps.add(wakeUp);
        return new CommitSignals.CommitWatch() {
            @Override
            public boolean listening() {
                return wakeUps.contains(wakeUp);
            }

            @Override
            public void close() {
                wakeUps.remove(wakeUp);
            }
        };
    }

    /** Calls every subscribed wake-up; one that throws is logged and the others are still called. */
    public void wakeAll() {
        for (Runnable wakeUp : wakeUps) {
            try {
                wakeUp.run();
            } catch (RuntimeException e) {
                log.warn("A commit wake-up failed", e);
            }
        }
    }

    /**
     * How many wake-ups are subscribed now.
     *
     * @return the count, 0 or more
     */

    public int size() {
        return wakeUps.size();
    }
}
