package dev.outbox.store.sql;

import dev.outbox.spi.StoreFencedException;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

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
     * @param seen the epoch the statement read under its lock, null if the row is missing
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
}
