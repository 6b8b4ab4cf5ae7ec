package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlKeySequence;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The key sequence's counter upsert on MySQL and MariaDB: {@code INSERT ... VALUES (..., LAST_INSERT_ID(n)) ON
 * DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + n)}, then {@code SELECT LAST_INSERT_ID()}, which returns the value
 * the upsert left in the session: two round trips per (topic, key). The row is found by the topic and the SHA-256 of
 * the key in UTF-8 (the {@code key-sequence.sql} resource tells why). The increment is bound as a parameter in both
 * places rather than read back with {@code VALUES(seq)}, which MySQL 8.0.20 deprecates, and with no row alias, which
 * MariaDB does not accept: the statement runs unchanged on both. A concurrent writer of the key waits at its upsert
 * for the first one's transaction to end (the row's exclusive lock). Immutable and thread-safe.
 */
final class MySqlKeyCounter implements SqlKeySequence.PerKey {
    private static final String LAST = "SELECT LAST_INSERT_ID()";

    private final String sql;

    /** @param table the counter table as it appears in SQL ({@link SqlKeySequence#table}) */
    MySqlKeyCounter(String table) {
        this.sql = "INSERT INTO " + table + " (topic, key_hash, `key`, seq)"
                + " VALUES (?, UNHEX(SHA2(CONVERT(? USING utf8mb4), 256)), ?, LAST_INSERT_ID(?))"
                + " ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq + ?)";
    }

    @Override
    public long add(Connection connection, String topic, String key, int n) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, topic);
            statement.setString(2, key);
            statement.setString(3, key);
            statement.setLong(4, n);
            statement.setLong(5, n);
            statement.executeUpdate();
        }
        try (PreparedStatement statement = connection.prepareStatement(LAST); ResultSet rs = statement.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
