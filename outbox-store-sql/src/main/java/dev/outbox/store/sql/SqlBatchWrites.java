package dev.outbox.store.sql;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The batch writes the engine asks of a SQL outbox — purge, reset, failure record, park — each checked, then run in
 * one transaction by the dialect's {@link SqlWrite}: fenced by its fenced statement, or by the fence lock first
 * ({@link SqlFencing#lock}) for a dialect without one. Immutable and thread-safe.
 */
final class SqlBatchWrites {
    private final SqlTransactions tx;
    private final SqlStatements sql;
    private final SqlDialect dialect;
    private final String table;

    SqlBatchWrites(SqlTransactions tx, SqlStatements sql, SqlDialect dialect, String table) {
        this.tx = tx;
        this.sql = sql;
        this.dialect = dialect;
        this.table = table;
    }

    void purge(Collection<Long> ids, long fence) {
        List<Long> sorted = SqlChecks.ids("ids", ids);
        write("purging " + sorted.size() + " rows of " + table, sql.purge(), sorted, null, null, fence);
    }

    void reset(UUID leaderId, Collection<Long> ids, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        List<Long> sorted = SqlChecks.ids("ids", ids);
        write("resetting " + sorted.size() + " rows of " + table, sql.reset(), sorted, null, leaderId, fence);
    }

    void retryLater(Map<Long, Instant> nextAttempts, long fence) {
        TreeMap<Long, Object> values = new TreeMap<>();
        SqlChecks.nextAttempts(nextAttempts).forEach((id, at) -> values.put(id, dialect.columns().instantValue(at)));
        write("recording failed deliveries of " + values.size() + " rows of " + table, sql.retryLater(),
                List.copyOf(values.keySet()), values, null, fence);
    }

    void park(Map<Long, String> reasons, long fence) {
        TreeMap<Long, String> sorted = SqlChecks.reasons(reasons, dialect.columns()::storable);
        write("parking " + sorted.size() + " rows of " + table, sql.park(), List.copyOf(sorted.keySet()), sorted,
                null, fence);
    }

    /** Runs {@code write} on the ids in one transaction; nothing for no ids. */
    private void write(String operation, SqlWrite write, List<Long> ids, Map<Long, ?> values, UUID leader,
                       long fence) {
        if (ids.isEmpty()) {
            return;
        }
        tx.inTransaction(operation, sql.prologue(), handle -> {
            if (write.fenced() == null) {
                SqlFencing.lock(handle.getConnection(), tx, sql.fenceLock(), operation, fence);
            }
            return dialect.ids().run(handle.getConnection(), tx, dialect.columns(), write, ids, values, leader,
                    fence, operation);
        });
    }
}
