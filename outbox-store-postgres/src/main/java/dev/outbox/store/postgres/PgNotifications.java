package dev.outbox.store.postgres;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.CommitSignals.CommitWatch;
import org.jdbi.v3.core.Jdbi;

/**
 * The commit notifications of one Postgres outbox (table harvest, {@link PostgresStore.Builder#commitNotifications}):
 * the channel its publisher notifies, the watches its leaders listen with ({@link PgCommitListener}, one connection
 * of the store's pool while a watch is open; one shared by every shard of a sharded outbox, {@link SharedCommitWatch}),
 * each beside this process's publishers' own wake-ups, and the optional trigger for plain-SQL writers. Immutable and
 * thread-safe.
 */
final class PgNotifications {
    private final Jdbi jdbi;
    private final SqlTableNames names;
    private final String channel;
    /** The one listening connection of a sharded outbox's shard harvests; null otherwise. */
    private final SharedCommitWatch shared;

    /**
     * @param sharded whether the outbox has more than one shard, whose harvests then share one listener
     */
    PgNotifications(Jdbi jdbi, SqlTableNames names, boolean sharded) {
        this.jdbi = jdbi;
        this.names = names;
        this.channel = PgCommitListener.channel(names.schema(), names.table());
        this.shared = sharded ? new SharedCommitWatch(wakeAll -> new PgCommitListener(jdbi, channel, wakeAll)) : null;
    }

    /** The channel commits are notified on. */
    String channel() {
        return channel;
    }

    /** A listening watch of the whole outbox beside {@code local}, this process's publishers' wake-ups. */
    CommitWatch watch(CommitWatch local, Runnable wakeUp) {
        return new LocalAndListening(local, new PgCommitListener(jdbi, channel, wakeUp));
    }

    /**
     * A shard's watch beside {@code local}: its share of the one listening connection of every shard this process
     * harvests (a commit to any shard wakes them all), or a listener of its own for an unsharded outbox.
     */
    CommitWatch watchShard(CommitWatch local, Runnable wakeUp) {
        return shared != null ? new LocalAndListening(local, shared.watch(wakeUp)) : watch(local, wakeUp);
    }

    /** See {@link PostgresStore#notifyTriggerSql()}. */
    String triggerSql() {
        String function = (names.schema() == null ? "" : '"' + names.schema() + "\".") + '"' + names.table()
                + "_notify\"";
        return "CREATE OR REPLACE FUNCTION " + function + "() RETURNS trigger LANGUAGE plpgsql AS $$"
                + " BEGIN PERFORM pg_notify('" + channel + "', ''); RETURN NULL; END $$;"
                + " CREATE OR REPLACE TRIGGER \"" + names.table() + "_notify\" AFTER INSERT ON " + names.outbox()
                + " FOR EACH STATEMENT EXECUTE FUNCTION " + function + "()";
    }

    /**
     * A listening watch with this process's publishers' wake-ups beside it: the listener says whether it is
     * listening and is told when wake-ups are needed; the local watch costs nothing while unneeded, and stays.
     */
    static final class LocalAndListening implements CommitWatch {
        private final CommitWatch local;
        /** The listening half ({@link PgCommitListener}, or a shard's share of one). */
        final CommitWatch listener;

        LocalAndListening(CommitWatch local, CommitWatch listener) {
            this.local = local;
            this.listener = listener;
        }

        @Override
        public boolean listening() {
            return listener.listening();
        }

        @Override
        public void needed(boolean needed) {
            listener.needed(needed);
        }

        @Override
        public void close() {
            local.close();
            listener.close();
        }
    }
}
