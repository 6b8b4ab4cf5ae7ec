package dev.outbox.spi;

/**
 * A {@link Store} capability: telling the dispatcher when rows may have been committed to the outbox, so that an
 * idle leader reads at once instead of at its next poll (Postgres: {@code LISTEN/NOTIFY}). A store without it is
 * polled, backing off up to {@code pollInterval} while idle.
 */
public interface CommitSignals {

    /**
     * Asks to be told when rows may have been committed. The store calls {@code wakeUp} from any thread after such a
     * commit; it may call it spuriously or more than once per commit, and should call it once after it
     * (re)connects, since it cannot know what was committed while it was not listening. The polling stays the safety
     * net: a lost or late call delays a record until the next poll, never loses it.
     *
     * <p>The dispatcher's harvesting thread subscribes when it starts harvesting (it became leader) and closes the
     * subscription when it stops, so only the leader listens.
     *
     * @param wakeUp what to call; cheap, non-blocking and thread-safe
     * @return the subscription, closed when the harvest stops; or null if the store cannot tell after all
     */
    CommitWatch watchCommits(Runnable wakeUp);

    /**
     * A subscription to commit wake-ups ({@link #watchCommits}). Thread-safe.
     */
    interface CommitWatch extends AutoCloseable {
        /**
         * Whether the store is listening now; false while its listening connection is down and being re-opened
         * (the dispatcher polls meanwhile). For health reports.
         *
         * @return whether wake-ups can come now
         */
        boolean listening();

        /**
         * Whether the dispatcher needs wake-ups now: false while it reads back to back (a busy outbox; a wake-up
         * would be wasted, and listening costs the database work per commit), true before it pauses idle. A watch
         * may stop listening while not needed; when needed again it must listen again and then wake the dispatcher
         * once, for what was committed meanwhile. Called by the harvest thread, on changes only. The default
         * ignores it.
         *
         * @param needed whether wake-ups are needed from now on
         */
        default void needed(boolean needed) {
        }

        /** Ends the subscription and releases what it holds (a connection, a thread); idempotent, never throws. */
        @Override
        void close();
    }
}
