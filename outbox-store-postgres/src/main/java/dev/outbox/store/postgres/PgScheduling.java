package dev.outbox.store.postgres;

import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlTransactions;

import java.sql.PreparedStatement;

/**
 * Postgres' statements for "not before" ({@link SqlScheduling}, {@code scheduling.sql}): the release is one statement,
 * the due rows picked {@code FOR UPDATE} in id order, deleted and inserted into the outbox by data-modifying
 * {@code WITH} queries; the due time of a written row is the database's {@code statement_timestamp()} plus the delay,
 * or the given time. Stateless.
 */
final class PgScheduling {
    private PgScheduling() {
    }

    /**
     * The store's release of due messages; with {@code holdsKey} a due row waits behind an earlier row of its key
     * that is not due yet.
     */
    static SqlScheduling release(SqlTransactions tx, SqlTableNames names, String settings, boolean holdsKey) {
        String s = SqlScheduling.table(names);
        String columns = "topic, key, value, header_names, header_values, message_id";
        String held = !holdsKey ? "" : " AND NOT EXISTS (SELECT FROM " + s + " e WHERE e.topic = s.topic"
                + " AND e.key = s.key AND e.id < s.id AND e.due_at > now())";
        String move = "WITH due AS (SELECT s.id FROM " + s + " s WHERE s.due_at <= now()" + held
                + " ORDER BY s.id LIMIT ? FOR UPDATE),"
                + " moved AS (DELETE FROM " + s + " s USING due WHERE s.id = due.id RETURNING s.id, s.topic, s.key,"
                + " s.value, s.header_names, s.header_values, s.message_id),"
                + " inserted AS (INSERT INTO " + names.outbox() + " (" + columns + ") SELECT " + columns
                + " FROM moved ORDER BY id RETURNING 1)"
                + " SELECT count(*) FROM inserted";
        String nextDue = "SELECT CAST(ceil(EXTRACT(EPOCH FROM (min(due_at) - clock_timestamp())) * 1000000) AS bigint)"
                + " FROM " + s + " WHERE due_at > now()";
        String exists = "SELECT 1 FROM " + s + " WHERE topic = ? AND key = ? LIMIT 1";
        return new SqlScheduling(tx, names, new SqlScheduling.Statements(exists, (t, connection, limit) -> {
            try (PreparedStatement statement = t.prepare(connection, move)) {
                statement.setInt(1, limit);
                try (var rs = statement.executeQuery()) {
                    rs.next();
                    return rs.getInt(1);
                }
            }
        }, nextDue, settings), holdsKey);
    }

    /**
     * The {@code INSERT} of a scheduled row: the outbox {@code INSERT}'s six parameters, then the due time's two
     * ({@link SqlScheduling#bindDue}).
     */
    static String insertSql(SqlTableNames names) {
        return "INSERT INTO " + SqlScheduling.table(names)
                + " (topic, key, value, header_names, header_values, message_id, due_at) VALUES (?, ?, ?, ?, ?, ?,"
                + " COALESCE(TIMESTAMPTZ 'epoch' + CAST(? AS bigint) * INTERVAL '1 microsecond', statement_timestamp())"
                + " + CAST(? AS bigint) * INTERVAL '1 microsecond')";
    }
}
