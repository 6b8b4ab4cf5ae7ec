package dev.outbox.store.h2;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlTransactions;

/**
 * H2's statements for "not before" ({@link SqlScheduling}, {@code scheduling.sql}): the release picks the due rows
 * {@code FOR UPDATE} in id order, inserts them into the outbox and deletes them, three statements in one transaction;
 * the due time of a written row is {@code CURRENT_TIMESTAMP} (the transaction's) plus the delay, or the given time.
 * Stateless.
 */
final class H2Scheduling {
    private static final String EPOCH = "TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00'";
    private static final String PAYLOAD = "topic, \"key\", \"value\", header_names, header_values, message_id";

    private H2Scheduling() {
    }

    /**
     * The store's release of due messages; with {@code holdsKey} a due row waits behind an earlier row of its key
     * that is not due yet.
     */
    static SqlScheduling release(SqlTransactions tx, SqlTableNames names, String prologue, boolean holdsKey) {
        String s = SqlScheduling.table(names);
        String held = !holdsKey ? "" : " AND NOT EXISTS (SELECT 1 FROM " + s + " e WHERE e.topic = s.topic"
                + " AND e.\"key\" = s.\"key\" AND e.id < s.id AND e.due_at > CURRENT_TIMESTAMP)";
        String pick = "SELECT s.id FROM " + s + " s WHERE s.due_at <= CURRENT_TIMESTAMP" + held
                + " ORDER BY s.id FETCH FIRST ? ROWS ONLY FOR UPDATE";
        String nextDue = "SELECT DATEDIFF(MICROSECOND, CURRENT_TIMESTAMP, MIN(due_at)) FROM " + s
                + " WHERE due_at > CURRENT_TIMESTAMP";
        String exists = "SELECT 1 FROM " + s + " WHERE topic = ? AND \"key\" = ? FETCH FIRST 1 ROW ONLY";
        return new SqlScheduling(tx, names, new SqlScheduling.Statements(exists, SqlScheduling.pickMoveDelete(pick,
                n -> "INSERT INTO " + names.outbox() + " (" + PAYLOAD + ") SELECT " + PAYLOAD + " FROM " + s
                        + " WHERE id IN (" + SqlScheduling.marks(n) + ") ORDER BY id",
                n -> "DELETE FROM " + s + " WHERE id IN (" + SqlScheduling.marks(n) + ")"), nextDue, prologue),
                holdsKey);
    }

    /** The scheduled row's {@code INSERT}: the outbox insert's six parameters, then the due time's two. */
    static String insertSql(SqlTableNames names) {
        return "INSERT INTO " + SqlScheduling.table(names) + " (" + PAYLOAD + ", due_at) VALUES (?, ?, ?, ?, ?, ?,"
                + " DATEADD(MICROSECOND, COALESCE(CAST(? AS BIGINT), DATEDIFF(MICROSECOND, " + EPOCH
                + ", CURRENT_TIMESTAMP)) + CAST(? AS BIGINT), " + EPOCH + "))";
    }
}
