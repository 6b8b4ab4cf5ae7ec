package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlKeySequence;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The key sequence's counter upsert on Postgres: {@code INSERT ... ON CONFLICT (topic, key) DO UPDATE SET seq =
 * s.seq + EXCLUDED.seq RETURNING seq}, one statement and one round trip per (topic, key). A concurrent writer of
 * the key waits at its upsert for the first one's transaction to end, then adds to the value it committed (or, if it
 * rolled back, inserts the row itself). Under REPEATABLE READ or SERIALIZABLE, the second writer fails with a
 * serialization error instead, and its transaction is to be retried. Immutable and thread-safe.
 */
final class PgKeyCounter implements SqlKeySequence.Counter {
    private final String sql;
    private final int queryTimeoutSeconds;

    /**
     * @param table               the counter table as it appears in SQL ({@link SqlKeySequence#table})
     * @param queryTimeoutSeconds the statement's JDBC query timeout, as the publisher's
     */
    PgKeyCounter(String table, int queryTimeoutSeconds) {
        this.sql = "INSERT INTO " + table + " AS s (topic, key, seq) VALUES (?, ?, ?) ON CONFLICT (topic, key)"
                + " DO UPDATE SET seq = s.seq + EXCLUDED.seq RETURNING seq";
        this.queryTimeoutSeconds = queryTimeoutSeconds;
    }

    @Override
    public long add(Connection connection, String topic, String key, int n) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setQueryTimeout(queryTimeoutSeconds);
            statement.setString(1, topic);
            statement.setString(2, key);
            statement.setLong(3, n);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
