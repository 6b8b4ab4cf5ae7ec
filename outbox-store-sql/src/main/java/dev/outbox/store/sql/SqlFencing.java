package dev.outbox.store.sql;

import dev.outbox.spi.StoreFencedException;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * Storage fencing's checks, the same for every SQL store: a fenced write either runs a fenced statement that
 * returns the epoch it saw ({@link SqlWrite#fenced()}), or begins its transaction with a locking read of the leader
 * row ({@link SqlStatements#fenceLock()}, {@link #lock}); either way it changes nothing unless the epoch is its own,
 * and fails with a {@link StoreFencedException}. For store implementations. Stateless.
 */
public final class SqlFencing {
    /** The fence of an unfenced write: no epoch is checked. */
    public static final long UNFENCED = -1;

    private SqlFencing() {
    }

    /**
     * What a fenced write of {@code operation} saw: nothing if the leader table's epoch was {@code epoch} (the
     * statement then did its work), else a {@link StoreFencedException} (it changed nothing).
     *
     * @param operation what was written, for the exception's message
     * @param epoch     the write's fence: the epoch its leadership holds
     * @param seen      the epoch the statement read under its lock, null if the row is missing
     * @throws StoreFencedException if {@code seen} is null or not {@code epoch}
     */
    public static void check(String operation, long epoch, Long seen) {
        if (seen == null || seen != epoch) {
            throw new StoreFencedException(operation, epoch, seen == null ? -1 : seen);
        }
    }

    /**
     * The fence of a transaction, its first statement: {@code fenceLock} reads the leader row with a lock held until
     * the transaction ends, and the write is refused unless the epoch is {@code fence}. An increment of the epoch
     * waits for the lock (so the write commits first), or the read waits for the increment's lock and then reads
     * the new epoch. Nothing for an {@link #UNFENCED} write.
     *
     * @param connection the transaction's connection, before any other statement of the transaction
     * @param tx         the store's transactions, which prepare the statement with its timeout
     * @param fenceLock  the dialect's locking read of the leader row's epoch ({@link SqlStatements#fenceLock()})
     * @param operation  what is written, for the exception's message
     * @param fence      the epoch the write requires, or {@link #UNFENCED}
     * @throws SQLException         as the driver throws it
     * @throws StoreFencedException if the epoch is not {@code fence} (or the leader row is missing)
     */

    public static void lock(Connection connection, SqlTransactions tx, String fenceLock, String operation, long fence)
            throws SQLException {
        if (fence == UNFENCED) {
            return;
        }
        try (PreparedStatement statement = tx.prepare(connection, fenceLock)) {
            check(operation, fence, IdBinding.firstLong(statement));
        }
    }

    /**
     * Increments the leader table's epoch row and returns the new epoch, in one transaction: the dialect's
     * {@link SqlStatements#takeEpoch()} statements, the last of which reads the epoch. The increment takes the row's
     * lock, so it waits for every fenced write under way.
     *
     * @param tx        the store's transactions
     * @param sql       the store's statements
     * @param operation what is done, for an exception's message
     * @return the new epoch
     */
    static long acquireEpoch(SqlTransactions tx, SqlStatements sql, String operation) {
        return tx.inTransaction(operation, sql.prologue(), handle -> {
            List<String> statements = sql.takeEpoch();
            for (int i = 0; i < statements.size() - 1; i++) {
                try (PreparedStatement statement = tx.prepare(handle.getConnection(), statements.get(i))) {
                    statement.executeUpdate();
                }
            }
            try (PreparedStatement statement = tx.prepare(handle.getConnection(),
                    statements.get(statements.size() - 1))) {
                return IdBinding.firstLong(statement);
            }
        });
    }
}
