package dev.outbox.store.mysql;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlTransactions;

/**
 * MySQL's and MariaDB's statements for "not before" ({@link SqlScheduling}, {@code scheduling.sql}): the release picks
 * the due rows {@code FOR UPDATE} in id order, inserts them into the outbox and deletes them, three statements in one
 * {@code READ COMMITTED} transaction (no gap locks to stall the writers); due times are UTC, on
 * {@code UTC_TIMESTAMP(6)} plus the delay, or the given time. Stateless.
 */
final class MySqlScheduling {
    private static final String EPOCH = "CAST('1970-01-01 00:00:00' AS DATETIME(6))";
    private static final String PAYLOAD = "topic, `key`, value, headers, message_id";

    private MySqlScheduling() {
    }

    /**
     * The store's release of due messages; with {@code holdsKey} a due row waits behind an earlier row of its key
     * that is not due yet.
     */
    static SqlScheduling release(SqlTransactions tx, SqlTableNames names, boolean holdsKey) {
        String s = SqlScheduling.table(names);
        String held = !holdsKey ? "" : " AND NOT EXISTS (SELECT 1 FROM " + s + " e WHERE e.topic = s.topic"
                + " AND e.key_hash = s.key_hash AND e.`key` = s.`key` AND e.id < s.id AND e.due_at > UTC_TIMESTAMP(6))";
        String pick = "SELECT s.id FROM " + s + " s WHERE s.due_at <= UTC_TIMESTAMP(6)" + held
                + " ORDER BY s.id LIMIT ? FOR UPDATE";
        String nextDue = "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(due_at)) FROM " + s
                + " WHERE due_at > UTC_TIMESTAMP(6)";
        String exists = "SELECT 1 FROM " + s + " WHERE topic = ? AND key_hash = UNHEX(SHA2(CONVERT(? USING utf8mb4),"
                + " 256)) LIMIT 1";
        return new SqlScheduling(tx, names, new SqlScheduling.Statements(exists, SqlScheduling.pickMoveDelete(pick,
                n -> "INSERT INTO " + names.outbox() + " (" + PAYLOAD + ") SELECT " + PAYLOAD + " FROM " + s
                        + " WHERE id IN (" + SqlScheduling.marks(n) + ") ORDER BY id",
                n -> "DELETE FROM " + s + " WHERE id IN (" + SqlScheduling.marks(n) + ")"), nextDue,
                MySqlStatements.READ_COMMITTED), holdsKey);
    }

    /** The scheduled row's {@code INSERT}: topic, key, value, headers, message id, then the due time's two. */
    static String insertSql(SqlTableNames names) {
        return "INSERT INTO " + SqlScheduling.table(names) + " (" + PAYLOAD + ", due_at) VALUES (?, ?, ?, ?, ?,"
                + " TIMESTAMPADD(MICROSECOND, COALESCE(?, TIMESTAMPDIFF(MICROSECOND, " + EPOCH + ", UTC_TIMESTAMP(6)))"
                + " + ?, " + EPOCH + "))";
    }
}
