package dev.outbox.store.postgres;

import dev.outbox.spi.Store;
import org.jdbi.v3.core.Jdbi;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The commit wake-ups of a sharded outbox's shards ({@link PostgresStore#shard}): one {@link PgCommitListener}, one
 * connection of the store's pool, for every shard harvest of this process that watches, instead of one per shard.
 * A notification (a commit to any shard) wakes them all. It listens while any watch is {@linkplain
 * Store.CommitWatch#needed needed}, opens with the first watch and closes with the last. A watch that joins a
 * listener already open is woken once, for what was committed before it joined.
 *
 * <p>Thread-safe.
 */
final class SharedCommitListener {
    private final Jdbi jdbi;
    private final String channel;
    /** The watches open now. Guarded by {@code this}. */
    private final Set<Watch> watches = new LinkedHashSet<>();
    /** The listener while a watch is open, else null. Guarded by {@code this}. */
    private PgCommitListener listener;

    SharedCommitListener(Jdbi jdbi, String channel) {
        this.jdbi = jdbi;
        this.channel = channel;
    }

    /** Subscribes {@code wakeUp}; see {@link Store#watchCommits}. */
    Store.CommitWatch watch(Runnable wakeUp) {
        Watch watch = new Watch(wakeUp);
        boolean joined;
        synchronized (this) {
            joined = listener != null;
            if (!joined) {
                listener = new PgCommitListener(jdbi, channel, this::wakeAll);
            }
            watches.add(watch);
            updateNeeded();
        }
        if (joined) {
            wakeUp.run();
        }
        return watch;
    }

    /** How many watches are open; for tests. */
    synchronized int size() {
        return watches.size();
    }

    private void wakeAll() {
        List<Watch> now;
        synchronized (this) {
            now = new ArrayList<>(watches);
        }
        for (Watch watch : now) {
            watch.wakeUp.run();
        }
    }

    /** Tells the listener whether any watch needs wake-ups. Caller holds {@code this}. */
    private void updateNeeded() {
        if (listener != null) {
            listener.needed(watches.stream().anyMatch(w -> w.needed));
        }
    }

    /** One shard harvest's subscription. */
    private final class Watch implements Store.CommitWatch {
        private final Runnable wakeUp;
        /** Guarded by the enclosing listener. */
        private boolean needed = true;

        Watch(Runnable wakeUp) {
            this.wakeUp = wakeUp;
        }

        @Override
        public boolean listening() {
            synchronized (SharedCommitListener.this) {
                return watches.contains(this) && listener != null && listener.listening();
            }
        }

        @Override
        public void needed(boolean needed) {
            synchronized (SharedCommitListener.this) {
                this.needed = needed;
                updateNeeded();
            }
        }

        @Override
        public void close() {
            PgCommitListener last = null;
            synchronized (SharedCommitListener.this) {
                if (!watches.remove(this)) {
                    return;
                }
                if (watches.isEmpty()) {
                    last = listener;
                    listener = null;
                } else {
                    updateNeeded();
                }
            }
            if (last != null) {
                last.close();
            }
        }
    }
}
