package dev.outbox.store.sql;

import dev.outbox.OutboxShards;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;

import java.util.function.Function;

/**
 * The second of {@link SqlStore}'s layers: its shards — the shard count a store reports, the view of each shard of a
 * sharded whole outbox (made once, {@link #view}) and the check that the table is made for the store's count
 * ({@link #checkShards()}); the views and the check's state are {@link SqlShards}'. Its public and protected members
 * are {@link SqlStore}'s; package-private so that only {@link SqlStore} is the API. Thread-safe.
 */
abstract class SqlShardViews extends SqlStoreSettings implements Sharding {
    private final SqlShards shardState;

    /** {@link SqlStore}'s constructor says what it takes and throws. */
    SqlShardViews(SqlStoreBuilder<?, ?> builder, int shardIndex, Function<SqlTable, SqlStatements> statements) {
        super(builder, shardIndex, statements);
        this.shardState = new SqlShards(transactions(), sqlStatements(), names.outbox(), shardCount());
    }

    /**
     * The outbox's shard count ({@link SqlStore.Builder#shards}) for the whole store; 1 for the view of one shard
     * (which is, for the dispatcher that harvests it, an outbox of its own).
     */
    @Override
    public int shards() {
        return shardIndex() < 0 ? shardCount() : 1;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view is a store of the same class over the same table ({@link #view}) whose mark, read, backlog and
     * oldest create time see only the shard's rows, and whose epoch is the leader table's row {@code index + 1}.
     * Each view is made once.
     */
    @Override
    public final Store shard(int index) {
        OutboxShards.checkIndex(index, shards());
        return shards() == 1 ? (Store) this : shardState.view(index, this::view); // this is a SqlStore
    }

    /**
     * A new view of shard {@code index} of this whole outbox ({@link #shard}); a store that can be sharded overrides
     * it. This default is for a store with one shard, which is its own view: it is never called.
     *
     * @param index the shard, from 0 to {@link #shardCount()} - 1, checked by the caller
     * @return a new store of the subclass for that shard's view
     * @throws UnsupportedOperationException always
     */
    protected SqlStore view(int index) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no shard views");
    }

    /**
     * Makes the views of a sharded whole outbox's shards now ({@link #view}), for a store whose builder may change
     * after {@code build()}: called last by the subclass's constructor. Nothing for a view or an unsharded store.
     */
    protected final void makeViews() {
        for (int i = 0; shardIndex() < 0 && shardCount() > 1 && i < shardCount(); i++) {
            shard(i);
        }
    }

    /**
     * {@code " (shard <i>)"} for a shard's view, for messages; empty for the whole outbox.
     *
     * @return the suffix, never null
     */
    protected final String shardName() {
        return shardIndex() < 0 ? "" : " (shard " + shardIndex() + ")";
    }

    /**
     * Checks that the outbox table is made for this store's shard count: a table without the generated
     * {@code shard} column has 1 shard, one with it has the count its expression takes the key's hash modulo. Runs
     * once per store object (the first call that finds them equal is remembered); {@link SqlStore#createSchema()} and
     * the first {@code acquireEpoch}, {@code mark} and {@code read} call it.
     *
     * @throws StoreException (not retriable) naming both counts if they differ, or the expression if the count
     *                        cannot be read from it
     */
    public final void checkShards() {
        shardState.check();
    }

    /** Runs {@link #checkShards()} before a harvest call. */
    protected final void requireShards() {
        shardState.check();
    }

    /** The shard views and check, for the schema's scripts, which check the shards after they run. */
    final SqlShards shardState() {
        return shardState;
    }
}
