package dev.outbox.store.h2;

import dev.outbox.store.sql.SqlKeySequence;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The key sequence's counter upsert on H2: one {@code MERGE} that adds n to the (topic, key) row (or inserts it at
 * n) and returns the new value ({@code SELECT seq FROM FINAL TABLE (MERGE ...)}). Two writers that both insert a new
 * key's row: the second waits for the first's lock and then fails on the primary key (H2 checks uniqueness at the
 * insert), so it runs the statement once more, which then finds the row and updates it. Immutable and thread-safe.
 */
final class H2KeyCounter implements SqlKeySequence.PerKey {
    /** H2's duplicate-key state. */
    private static final String DUPLICATE_KEY = "23505";

    private final String sql;

    /** @param table the counter table as it appears in SQL ({@link SqlKeySequence#table}) */
    H2KeyCounter(String table) {
        this.sql = "SELECT seq FROM FINAL TABLE (MERGE INTO " + table + " AS t USING (VALUES (CAST(? AS VARCHAR),"
                + " CAST(? AS VARCHAR), CAST(? AS BIGINT))) AS s(topic, k, n) ON t.topic = s.topic AND t.\"key\" = s.k"
                + " WHEN MATCHED THEN UPDATE SET seq = t.seq + s.n"
                + " WHEN NOT MATCHED THEN INSERT (topic, \"key\", seq) VALUES (s.topic, s.k, s.n))";
    }

    @Override
    public long add(Connection connection, String topic, String key, int n) throws SQLException {
        try {
            return merge(connection, topic, key, n);
        } catch (SQLException e) {
            if (!DUPLICATE_KEY.equals(e.getSQLState())) {
                throw e;
            }
            return merge(connection, topic, key, n); // a concurrent writer inserted the row first: it is there now
        }
    }

    private long merge(Connection connection, String topic, String key, int n) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, topic);
            statement.setString(2, key);
            statement.setLong(3, n);
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("the key sequence's MERGE returned no row for topic '" + topic + "'");
                }
                return rs.getLong(1);
            }
        }
    }
}
