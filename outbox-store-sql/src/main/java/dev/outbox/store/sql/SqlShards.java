package dev.outbox.store.sql;

import dev.outbox.spi.StoreException;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * A sharded SQL outbox's state: the views of its shards, each made once ({@link #view}), and whether the outbox table
 * is made for the store's shard count — a table without the generated {@code shard} column has 1 shard, one with it
 * the count its expression takes the key's hash modulo ({@link ShardColumn#countOf}); the first check that finds the
 * counts equal is remembered, {@link #forget()} (after a reshard) clears it. Thread-safe.
 */
final class SqlShards {
    private final SqlTransactions tx;
    private final SqlStatements sql;
    private final String table;
    private final int shardCount;
    private volatile boolean checked;
    /** The views of the shards, made at the first {@link #view} call; guarded by this. */
    private SqlStore[] views;

    SqlShards(SqlTransactions tx, SqlStatements sql, String table, int shardCount) {
        this.tx = tx;
        this.sql = sql;
        this.table = table;
        this.shardCount = shardCount;
    }

    /** The view of shard {@code index} (checked by the caller), made by {@code make} the first time. */
    synchronized SqlStore view(int index, IntFunction<SqlStore> make) {
        if (views == null) {
            views = new SqlStore[shardCount];
        }
        if (views[index] == null) {
            views[index] = make.apply(index);
        }
        return views[index];
    }

    /** Checks once, then remembers it; {@link SqlStore#checkShards()} says what it throws. */
    void check() {
        if (checked) {
            return;
        }
        Optional<String> expression = expression();
        int tableShards = countOf(expression);
        if (tableShards != shardCount) {
            throw new StoreException(table + " is made for " + tableShards + " shard(s)"
                    + (expression.isEmpty() ? " (it has no generated shard column, or does not exist yet)"
                    : " (its shard column is " + expression.get() + ")") + ", but this store is configured with "
                    + shardCount + " shard(s): start every dispatcher with shards(" + tableShards + "), or change the"
                    + " table's count while no dispatcher runs (README, \"Sharded harvest\")", null, false);
        }
        checked = true;
    }

    /** The count the table is made for now, read from the database (1 without a shard column). */
    int tableShards() {
        return countOf(expression());
    }

    /** Forgets the check, so that the next {@link #check()} reads the table again. */
    void forget() {
        checked = false;
    }

    private static int countOf(Optional<String> expression) {
        return expression.isEmpty() ? 1 : ShardColumn.countOf(expression.get());
    }

    /** The generation expression of the outbox table's {@code shard} column; empty if it has none. */
    private Optional<String> expression() {
        return tx.inTransaction("reading the shard column of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.shardExpression());
                 ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
            }
        });
    }
}
