package dev.outbox.testkit;

import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CommitWatchers;

import java.util.Objects;

/**
 * The commit notifications of an {@link InMemoryStore}, as Postgres' {@code NOTIFY} gives them: whether they are on,
 * the open watches, and the wake-up of every watch after a committed write. Thread-safe.
 */
final class InMemoryCommitSignals {
    private final CommitWatchers watchers = new CommitWatchers();
    private volatile boolean on;

    void setOn(boolean on) {
        this.on = on;
    }

    boolean on() {
        return on;
    }

    /** A new watch that {@code wakeUp} is told through, or null while notifications are off. */
    CommitSignals.CommitWatch watch(Runnable wakeUp) {
        Objects.requireNonNull(wakeUp, "wakeUp");
        if (!on) {
            return null;
        }
        return watchers.watch(wakeUp);
    }

    /** The watches open now. */
    int size() {
        return watchers.size();
    }

    /** Wakes every open watch: a write committed. */
    void wakeAll() {
        watchers.wakeAll();
    }
}
