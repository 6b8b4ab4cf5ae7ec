package dev.outbox.store.sql;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * The gauges of a SQL outbox table as {@link SqlStore} reports them: the backlog, exact up to
 * {@value SqlStore#EXACT_BACKLOG_LIMIT} rows and the dialect's estimate above, and the head row's create time and
 * age, the age measured on the database's clock in the statement that finds the row. One statement each, from the
 * dialect's {@link SqlStatements}. Immutable and thread-safe.
 */
final class SqlGauges {
    private final SqlTransactions tx;
    private final SqlStatements sql;
    private final SqlColumns columns;
    private final String table;

    SqlGauges(SqlTransactions tx, SqlStatements sql, SqlColumns columns, String table) {
        this.tx = tx;
        this.sql = sql;
        this.columns = columns;
        this.table = table;
    }

    long backlog() {
        return tx.inTransaction("counting the backlog of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.backlog());
                 ResultSet rs = statement.executeQuery()) {
                rs.next();
                long counted = rs.getLong(1);
                return counted <= SqlStore.EXACT_BACKLOG_LIMIT ? counted : Math.max(counted, (long) rs.getDouble(2));
            }
        });
    }

    Optional<Instant> oldestCreateTime() {
        return tx.inTransaction("reading the head of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.oldest());
                 ResultSet rs = statement.executeQuery()) {
                return rs.next() ? Optional.ofNullable(columns.instant(rs, 1)) : Optional.empty();
            }
        });
    }

    /** The database's time now minus the head row's create time; zero if the clock reads earlier. */
    Optional<Duration> oldestAge() {
        return tx.inTransaction("reading the age of the head of " + table, sql.prologue(), handle -> {
            try (PreparedStatement statement = tx.prepare(handle.getConnection(), sql.oldest());
                 ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                Instant created = columns.instant(rs, 1);
                Instant now = columns.instant(rs, 2);
                if (created == null || now == null) {
                    return Optional.empty();
                }
                Duration age = Duration.between(created, now);
                return Optional.of(age.isNegative() ? Duration.ZERO : age);
            }
        });
    }
}
