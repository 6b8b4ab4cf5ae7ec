package dev.outbox.store.postgres;

import dev.outbox.spi.CommitSignals;

import dev.outbox.spi.CommitWatchers;

import java.util.Objects;
import java.util.function.Function;

/**
 * One commit watch shared by several subscribers: the shards of a sharded outbox that this process leads, so that
 * they hold one listening connection between them rather than one each. The shared watch is opened with the first
 * subscriber and closed with the last; every notification wakes every subscriber (a shard woken for another shard's
 * commit reads, finds nothing and pauses again); it is needed while any subscriber needs it.
 *
 * <p>Thread-safe.
 */
final class SharedCommitWatch {
    private final Function<Runnable, CommitSignals.CommitWatch> open;
    private final CommitWatchers subscribers = new CommitWatchers();
    private CommitSignals.CommitWatch shared;
    private int needing;
    /** What the shared watch was last told ({@link CommitSignals.CommitWatch#needed} is called on changes only). */
    private boolean sharedNeeded = true;

    /** @param open opens the shared watch, given the wake-up that fans out to the subscribers */
    SharedCommitWatch(Function<Runnable, CommitSignals.CommitWatch> open) {
        this.open = Objects.requireNonNull(open, "open");
    }

    /** Subscribes {@code wakeUp}; it is needed from the start, as a new watch is. */
    synchronized CommitSignals.CommitWatch watch(Runnable wakeUp) {
        CommitSignals.CommitWatch own = subscribers.watch(wakeUp);
        if (shared == null) {
            shared = open.apply(subscribers::wakeAll);
            sharedNeeded = true;
        }
        needing++;
        tellShared();
        return new Subscription(own);
    }

    /** Tells the shared watch whether any subscriber needs it, if that changed. Caller holds this monitor. */
    private void tellShared() {
        boolean now = needing > 0;
        if (now != sharedNeeded) {
            sharedNeeded = now;
            shared.needed(now); // needed again: it listens again if it had stopped, and wakes everyone once
        }
    }

    /** How many subscribers there are now; for tests. */
    int subscribers() {
        return subscribers.size();
    }

    private final class Subscription implements CommitSignals.CommitWatch {
        private final CommitSignals.CommitWatch own;
        private boolean needed = true;
        private boolean closed;

        Subscription(CommitSignals.CommitWatch own) {
            this.own = own;
        }

        @Override
        public boolean listening() {
            synchronized (SharedCommitWatch.this) {
                return !closed && shared != null && shared.listening();
            }
        }

        @Override
        public void needed(boolean needed) {
            synchronized (SharedCommitWatch.this) {
                if (closed || needed == this.needed) {
                    return;
                }
                this.needed = needed;
                needing += needed ? 1 : -1;
                tellShared();
            }
        }

        @Override
        public void close() {
            synchronized (SharedCommitWatch.this) {
                if (closed) {
                    return;
                }
                closed = true;
                own.close();
                if (needed) {
                    needing--;
                }
                if (subscribers.size() == 0) {
                    shared.close();
                    shared = null;
                    needing = 0;
                } else {
                    tellShared();
                }
            }
        }
    }
}
