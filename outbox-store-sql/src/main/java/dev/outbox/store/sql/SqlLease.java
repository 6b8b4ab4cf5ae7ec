package dev.outbox.store.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The lease table's rows as a store sees them: created, taken (with the epoch of storage fencing bumped in the same
 * transaction), renewed, released and read, each call a transaction of its own bounded by the lease's statement
 * timeout. Shared by the leader transports. Stateless apart from its settings; thread-safe.
 */
final class SqlLease {
    private final SqlTransactions tx;
    private final String prologue;
    private final SqlLeaseStatements sql;
    private final String table;
    private final long leaseMicros;

    /**
     * @param store   the store whose lease table this is (its connections, dialect and transactions' prologue)
     * @param sql     its dialect's lease statements
     * @param timeout the longest a lease statement may take
     * @param lease   how long a taken or renewed lease holds
     */
    SqlLease(SqlStore store, SqlLeaseStatements sql, Duration timeout, Duration lease) {
        this.tx = new SqlTransactions(store.jdbi(), store.dialect().errors(), timeout, true);
        this.prologue = store.sqlStatements().prologue();
        this.sql = sql;
        this.table = store.names.lease();
        this.leaseMicros = lease.toNanos() / 1000;
    }

    /** The lease table's DDL, statements ended by {@code ;}. */
    String schemaSql() {
        return String.join(";\n", sql.createTable()) + ";\n";
    }

    /** The lease table as it appears in SQL. */
    String table() {
        return table;
    }

    /** Creates the lease table if it does not exist (if {@code createTable}), and the rows if they do not. */
    void createRows(List<Integer> rows, boolean createTable) {
        if (createTable) {
            try {
                createTable();
            } catch (dev.outbox.spi.StoreException e) {
                createTable(); // Postgres: two CREATE TABLE IF NOT EXISTS at once may collide; the table is there now
            }
        }
        try {
            addRows(rows);
        } catch (dev.outbox.spi.StoreException e) {
            addRows(rows); // H2: two MERGEs of a missing row at once may collide; the row is there now
        }
    }

    private void addRows(List<Integer> rows) {
        tx.inTransaction("adding the lease rows " + rows + " to " + table, prologue, handle -> {
            for (int row : rows) {
                try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.addRow())) {
                    statement.setInt(1, row);
                    statement.executeUpdate();
                }
            }
            return null;
        });
    }

    private void createTable() {
        tx.inTransaction("creating the lease table " + table, null, handle -> {
            try (Statement statement = handle.getConnection().createStatement()) {
                for (String ddl : sql.createTable()) {
                    statement.execute(ddl);
                }
            }
            return null;
        });
    }

    /**
     * Takes row {@code row} for {@code holder} if it is free or expired and, in the same transaction, runs
     * {@code takeEpoch} (storage fencing's epoch increment of the same row), so that a deposed holder's fenced writes
     * are refused from the moment the lease changes hands.
     *
     * @param takeEpoch the epoch's increment, or an empty list without storage fencing
     * @return whether the lease was taken
     */
    boolean acquire(int row, String holder, List<String> takeEpoch) {
        return tx.inTransaction("taking the lease " + row + " of " + table, prologue, handle -> {
            Connection c = handle.getConnection();
            try (PreparedStatement statement = tx.prepare(c, sql.acquire())) {
                statement.setString(1, holder);
                statement.setLong(2, leaseMicros);
                statement.setInt(3, row);
                if (statement.executeUpdate() != 1) {
                    return false;
                }
            }
            for (String s : takeEpoch) {
                try (PreparedStatement statement = tx.prepare(c, s)) {
                    statement.execute();
                }
            }
            return true;
        });
    }

    /** Extends {@code holder}'s unexpired lease of {@code row}; false if it no longer holds it. */
    boolean renew(int row, String holder) {
        return tx.inTransaction("renewing the lease " + row + " of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.renew())) {
                statement.setLong(1, leaseMicros);
                statement.setInt(2, row);
                statement.setString(3, holder);
                return statement.executeUpdate() == 1;
            }
        });
    }

    /** Frees {@code row} if {@code holder} holds it; false if it did not. */
    boolean release(int row, String holder) {
        return tx.inTransaction("releasing the lease " + row + " of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.release())) {
                statement.setInt(1, row);
                statement.setString(2, holder);
                return statement.executeUpdate() == 1;
            }
        });
    }

    /** One lease row as {@link #rows} reads it: its holder if unexpired, and who asked for it. */
    record Row(int id, String holder, String wantedBy) {
    }

    /**
     * Rows 1 to {@code last}, in id order; a request shows for as long as a lease lasts after it was last made (also
     * once the row was released for the member that asked).
     */
    List<Row> rows(int last) {
        return tx.inTransaction("reading the leases of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.rows())) {
                statement.setLong(1, leaseMicros);
                statement.setInt(2, last);
                List<Row> rows = new ArrayList<>();
                try (ResultSet rs = statement.executeQuery()) {
                    while (rs.next()) {
                        rows.add(new Row(rs.getInt(1), rs.getString(2), rs.getString(3)));
                    }
                }
                return rows;
            }
        });
    }

    /**
     * Asks {@code holder} for {@code row} on behalf of {@code wanter}, or renews {@code wanter}'s request for it: a
     * request lapses a lease after it was last made; false if another's request still holds or the row moved.
     */
    boolean want(int row, String wanter, String holder) {
        return tx.inTransaction("asking for the lease " + row + " of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.want())) {
                statement.setString(1, wanter);
                statement.setInt(2, row);
                statement.setString(3, holder);
                statement.setString(4, wanter);
                statement.setLong(5, leaseMicros);
                return statement.executeUpdate() == 1;
            }
        });
    }

    /** Extends every unexpired lease {@code holder} holds; returns how many. */
    int renewAll(String holder) {
        return tx.inTransaction("renewing the leases of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.renewAll())) {
                statement.setLong(1, leaseMicros);
                statement.setString(2, holder);
                return statement.executeUpdate();
            }
        });
    }

    /** Withdraws every request {@code wanter} made, on a live row or one released for it; returns how many. */
    int withdraw(String wanter) {
        return tx.inTransaction("withdrawing the requests for leases of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.withdraw())) {
                statement.setString(1, wanter);
                return statement.executeUpdate();
            }
        });
    }

    /** The unexpired holder of {@code row}, if any. */
    Optional<String> holder(int row) {
        return tx.inTransaction("reading the lease " + row + " of " + table, prologue, handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.holder())) {
                statement.setInt(1, row);
                try (ResultSet rs = statement.executeQuery()) {
                    return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
                }
            }
        });
    }
}
