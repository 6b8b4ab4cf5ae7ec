package dev.outbox.store.h2;

import dev.outbox.store.sql.SqlIdempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * The idempotency keys' statements on H2 ({@link SqlIdempotency}): per key, one {@code MERGE} that inserts the key,
 * or renews its entry if it has expired ({@code WHEN MATCHED AND created_at < ...}); its update count is 1 if it
 * claimed the key, 0 if the key is a duplicate within the retention. Two writers that both insert a new key: the
 * second waits for the first's lock and, if the first committed, fails on the primary key (H2 checks uniqueness at
 * the insert), so it runs the statement once more, which then finds the entry. Immutable and thread-safe.
 */
final class H2Idempotency {
    /** H2's duplicate-key state. */
    private static final String DUPLICATE_KEY = "23505";

    private H2Idempotency() {
    }

    /**
     * @param table the idempotency table as it appears in SQL
     * @return the statements
     */
    static SqlIdempotency.Statements statements(String table) {
        String claim = "MERGE INTO " + table + " AS t USING (VALUES (CAST(? AS VARCHAR))) AS s(k)"
                + " ON t.idempotency_key = s.k"
                + " WHEN MATCHED AND t.created_at < DATEADD(MICROSECOND, -CAST(? AS BIGINT), CURRENT_TIMESTAMP)"
                + " THEN UPDATE SET created_at = CURRENT_TIMESTAMP"
                + " WHEN NOT MATCHED THEN INSERT (idempotency_key, created_at) VALUES (s.k, CURRENT_TIMESTAMP)";
        String delete = "DELETE FROM " + table + " WHERE created_at < DATEADD(MICROSECOND, -CAST(? AS BIGINT),"
                + " CURRENT_TIMESTAMP) FETCH FIRST ? ROWS ONLY";
        return new SqlIdempotency.Statements(SqlIdempotency.perKey((connection, key, retentionMicros) ->
                claim(connection, claim, key, retentionMicros)), delete);
    }

    private static boolean claim(Connection connection, String sql, String key, long retentionMicros)
            throws SQLException {
        try {
            return merge(connection, sql, key, retentionMicros);
        } catch (SQLException e) {
            if (!DUPLICATE_KEY.equals(e.getSQLState())) {
                throw e;
            }
            return merge(connection, sql, key, retentionMicros); // a concurrent writer inserted it first
        }
    }

    private static boolean merge(Connection connection, String sql, String key, long retentionMicros)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, key);
            statement.setLong(2, retentionMicros);
            return statement.executeUpdate() == 1;
        }
    }
}
