package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlIdempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The idempotency keys' statements on MySQL and MariaDB ({@link SqlIdempotency}): per key, {@code INSERT ... ON
 * DUPLICATE KEY UPDATE} that renews the entry only if it has expired, then {@code SELECT LAST_INSERT_ID()} — two
 * round trips per key. Whether the key was claimed is not read from the affected-rows count: with
 * {@code CLIENT_FOUND_ROWS}, which Connector/J and the MariaDB driver set by default ({@code useAffectedRows=false}),
 * an unchanged duplicate counts 1, as a new key does, and without it 0; the statement leaves the answer in
 * {@code LAST_INSERT_ID()} instead, which it sets in both branches: 1 from the {@code VALUES} (evaluated first), then
 * the expiry test's 1 or 0 if the key was there. A concurrent writer of the key waits at the primary key for the
 * first one's transaction to end, then sees its committed entry (the upsert reads the latest version, not the
 * snapshot, under REPEATABLE READ). Immutable and thread-safe.
 */
final class MySqlIdempotency {
    private static final String LAST = "SELECT LAST_INSERT_ID()";

    private MySqlIdempotency() {
    }

    /**
     * @param table the idempotency table as it appears in SQL
     * @return the statements
     */
    static SqlIdempotency.Statements statements(String table) {
        String claim = "INSERT INTO " + table + " (idempotency_key, created_at) VALUES (?, IF(LAST_INSERT_ID(1),"
                + " NOW(6), NULL)) ON DUPLICATE KEY UPDATE created_at = IF(LAST_INSERT_ID(created_at < NOW(6)"
                + " - INTERVAL ? MICROSECOND), NOW(6), created_at)";
        String delete = "DELETE FROM " + table + " WHERE created_at < NOW(6) - INTERVAL ? MICROSECOND LIMIT ?";
        return new SqlIdempotency.Statements(SqlIdempotency.perKey((connection, key, retentionMicros) ->
                claim(connection, claim, key, retentionMicros)), delete);
    }

    private static boolean claim(Connection connection, String sql, String key, long retentionMicros)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, key);
            statement.setLong(2, retentionMicros);
            statement.executeUpdate();
        }
        try (PreparedStatement statement = connection.prepareStatement(LAST); ResultSet rs = statement.executeQuery()) {
            rs.next();
            return rs.getLong(1) == 1;
        }
    }
}
