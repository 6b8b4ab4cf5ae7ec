package dev.outbox.store.h2;

import dev.outbox.KeySequence;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlLeaseStatements;
import dev.outbox.store.sql.SqlStatements;
import dev.outbox.store.sql.SqlStore;
import dev.outbox.store.sql.SqlTable;
import dev.outbox.store.sql.SqlWrite;
import dev.outbox.store.sql.SqlWrite.Kind;
import dev.outbox.store.sql.SqlWrite.Step;

import java.util.List;

/**
 * H2's statements for one outbox table, as data: the shared ones ({@link #shared}, run by {@code SqlStore}) and
 * those of the publisher's insert, the mark, the read and the replay. Ids are bound as one {@code BIGINT ARRAY}
 * ({@code = ANY(?)}, {@code UNNEST(?, ?)}); a write is fenced by a locking read of the leader row first
 * ({@code FOR UPDATE}: H2 has no shared row lock and no data-modifying CTE). The mark marks and returns rows in one
 * statement ({@code SELECT ... FROM FINAL TABLE (UPDATE ...)}); {@code read} is the read's {@code SELECT ... WHERE}
 * before its conditions ({@link #readSql}); the others are the replay's steps ({@link H2Store#replay}). Immutable
 * and thread-safe.
 */
record H2Statements(String insert, String mark, String read, String lockKeys, String behind, String requeue,
                    String moveBack, String unpark, String delete) {

    /** The columns an outbox row moves to the parked table with. */
    private static final String ROW = "id, create_time, topic, \"key\", \"value\", header_names, header_values, leader_id, attempts, message_id";
    /** The columns of a row the harvest returns, in the order {@link H2Columns#row} reads them. */
    static final String COLUMNS = ROW + ", next_attempt_at";
    private static final String PAYLOAD = "topic, \"key\", \"value\", header_names, header_values, message_id";
    /**
     * {@link #PAYLOAD} of a replayed row: its headers with {@value KeySequence#REPLAYED} appended, whose value is the
     * parked row's id in ASCII decimal ({@link KeySequence#encode}).
     */
    private static final String REPLAYED_PAYLOAD = "topic, \"key\", \"value\", ARRAY_APPEND(header_names, '"
            + KeySequence.REPLAYED + "'), ARRAY_APPEND(header_values, STRINGTOUTF8(CAST(id AS VARCHAR))), message_id";
    private static final String SUMMARY = "id, topic, \"key\", attempts, reason, parked_at, message_id";
    /** The parked filter's 13 parameters; a parameter H2 must know the type of to test it for NULL is cast. */
    private static final String FILTER = " WHERE id > ? AND (CAST(? AS VARCHAR) IS NULL OR topic = ?)"
            + " AND (CAST(? AS VARCHAR) IS NULL OR \"key\" = ?) AND (CAST(? AS VARCHAR) IS NULL OR LOCATE(?, reason) > 0)"
            + " AND (CAST(? AS UUID) IS NULL OR message_id = ?)"
            + " AND (CAST(? AS TIMESTAMP WITH TIME ZONE) IS NULL OR parked_at >= ?)"
            + " AND (CAST(? AS TIMESTAMP WITH TIME ZONE) IS NULL OR parked_at < ?)";

    /** The lease table's statements: times compared with {@code CURRENT_TIMESTAMP}, the database's clock. */
    static SqlLeaseStatements lease(SqlTableNames names) {
        String l = names.lease();
        String later = "DATEADD(MICROSECOND, CAST(? AS BIGINT), CURRENT_TIMESTAMP)";
        return new SqlLeaseStatements(
                List.of("CREATE TABLE IF NOT EXISTS " + l + " (id SMALLINT PRIMARY KEY, holder CHARACTER VARYING(36),"
                        + " wanted_by CHARACTER VARYING(36), wanted_at TIMESTAMP(6) WITH TIME ZONE,"
                        + " expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL, acquired_at TIMESTAMP(6) WITH TIME ZONE)",
                        "ALTER TABLE " + l + " ADD COLUMN IF NOT EXISTS wanted_at TIMESTAMP(6) WITH TIME ZONE"),
                "MERGE INTO " + l + " AS t USING (SELECT CAST(? AS SMALLINT) AS id) AS s ON t.id = s.id"
                        + " WHEN NOT MATCHED THEN INSERT (id, expires_at) VALUES (s.id, CURRENT_TIMESTAMP)",
                "UPDATE " + l + " SET holder = ?, wanted_by = NULL, wanted_at = NULL, expires_at = " + later + ","
                        + " acquired_at = CURRENT_TIMESTAMP"
                        + " WHERE id = ? AND (holder IS NULL OR expires_at < CURRENT_TIMESTAMP)",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE id = ? AND holder = ?"
                        + " AND expires_at >= CURRENT_TIMESTAMP",
                "UPDATE " + l + " SET holder = NULL, expires_at = CURRENT_TIMESTAMP WHERE id = ? AND holder = ?",
                "SELECT holder FROM " + l + " WHERE id = ? AND holder IS NOT NULL AND expires_at >= CURRENT_TIMESTAMP",
                "SELECT id, CASE WHEN expires_at >= CURRENT_TIMESTAMP THEN holder END, CASE WHEN wanted_at >="
                        + " DATEADD(MICROSECOND, -CAST(? AS BIGINT), CURRENT_TIMESTAMP) THEN wanted_by END FROM " + l
                        + " WHERE id >= 1 AND id <= ? ORDER BY id",
                "UPDATE " + l + " SET wanted_by = ?, wanted_at = CURRENT_TIMESTAMP WHERE id = ? AND holder = ?"
                        + " AND expires_at >= CURRENT_TIMESTAMP AND (wanted_by IS NULL OR wanted_by = ?"
                        + " OR wanted_at IS NULL OR wanted_at < DATEADD(MICROSECOND, -CAST(? AS BIGINT),"
                        + " CURRENT_TIMESTAMP))",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE holder = ? AND expires_at >= CURRENT_TIMESTAMP",
                "UPDATE " + l + " SET wanted_by = NULL, wanted_at = NULL WHERE wanted_by = ?");
    }

    /** The statements only this store runs, for {@code t}. */
    static H2Statements of(SqlTable t) {
        String o = t.outbox();
        String p = t.parked();
        return new H2Statements("INSERT INTO " + o + " (" + PAYLOAD + ") VALUES (?, ?, ?, ?, ?, ?)",
                "SELECT " + COLUMNS + " FROM FINAL TABLE (UPDATE " + o + " SET leader_id = ? WHERE id IN (SELECT id FROM "
                        + o + " WHERE leader_id IS NULL OR leader_id <> ? ORDER BY id LIMIT ?)) ORDER BY id",
                "SELECT " + COLUMNS + " FROM " + o + " WHERE ",
                "SELECT id, \"key\" FROM " + p + " WHERE id = ANY(?) ORDER BY id FOR UPDATE",
                "SELECT id FROM " + o + " WHERE \"key\" = ? AND id > ? ORDER BY id FOR UPDATE",
                "INSERT INTO " + o + " (" + PAYLOAD + ") SELECT " + REPLAYED_PAYLOAD + " FROM " + p
                        + " WHERE id = ANY(?) ORDER BY id",
                "INSERT INTO " + o + " (create_time, " + PAYLOAD + ", attempts, next_attempt_at) SELECT create_time, "
                        + PAYLOAD + ", attempts, next_attempt_at FROM " + o + " WHERE id = ANY(?) ORDER BY id",
                "DELETE FROM " + p + " WHERE id = ANY(?)",
                "DELETE FROM " + o + " WHERE id = ANY(?)");
    }

    /** The read for {@code ranges} recheck ranges: {@code id > ?} or in one of them, the lowest ids first. */
    String readSql(int ranges) {
        return read + "id > ?" + " OR id BETWEEN ? AND ?".repeat(ranges) + " ORDER BY id LIMIT ?";
    }

    /** The statements {@code SqlStore} runs, for {@code t}. */
    static SqlStatements shared(SqlTable t) {
        String o = t.outbox();
        String p = t.parked();
        String l = t.leader();
        String schema = t.names().schema() == null ? "SCHEMA()" : SqlTable.literal(t.names().schema());
        return new SqlStatements(
                "SET LOCK_TIMEOUT " + Math.min(Integer.MAX_VALUE, t.statementTimeout().toMillis()),
                SqlWrite.of(Step.of(Kind.IDS, "DELETE FROM " + o + " WHERE id = ANY(?)")),
                SqlWrite.of(Step.of(Kind.LEADER_THEN_IDS, "UPDATE " + o + " SET attempts = attempts + 1,"
                        + " leader_id = CASE WHEN leader_id = ? THEN NULL ELSE leader_id END WHERE id = ANY(?)")),
                SqlWrite.of(Step.of(Kind.PAIRS, "MERGE INTO " + o + " USING (SELECT * FROM UNNEST(CAST(? AS BIGINT"
                        + " ARRAY), CAST(? AS TIMESTAMP(6) WITH TIME ZONE ARRAY))) AS r(id, at) ON " + o + ".id = r.id"
                        + " WHEN MATCHED THEN UPDATE SET attempts = " + o + ".attempts + 1, next_attempt_at = r.at")),
                SqlWrite.of(Step.of(Kind.LOCK, "SELECT id FROM " + o + " WHERE id = ANY(?) ORDER BY id FOR UPDATE"),
                        Step.of(Kind.PAIRS, "INSERT INTO " + p + " (" + ROW + ", reason) SELECT "
                                + "o.id, o.create_time, o.topic, o.\"key\", o.\"value\", o.header_names, o.header_values,"
                                + " o.leader_id, o.attempts, o.message_id, r.reason FROM " + o + " o JOIN UNNEST(CAST(? AS"
                                + " BIGINT ARRAY), CAST(? AS VARCHAR ARRAY)) AS r(id, reason) ON o.id = r.id ORDER BY o.id"),
                        Step.of(Kind.IDS, "DELETE FROM " + o + " WHERE id = ANY(?)")),
                SqlWrite.of(Step.of(Kind.IDS, "DELETE FROM " + p + " WHERE id = ANY(?)")),
                List.of("MERGE INTO " + l + " USING (VALUES 1) AS s(id) ON " + l + ".id = s.id WHEN MATCHED THEN UPDATE"
                                + " SET epoch = " + l + ".epoch + 1, acquired_at = CURRENT_TIMESTAMP WHEN NOT MATCHED THEN"
                                + " INSERT (id, epoch) VALUES (s.id, 1)",
                        "SELECT epoch FROM " + l + " WHERE id = 1"),
                "SELECT epoch FROM " + l + " WHERE id = 1 FOR UPDATE",
                "SELECT " + SUMMARY + " FROM " + p + " ORDER BY id LIMIT ?",
                "SELECT " + SUMMARY + " FROM " + p + FILTER + " ORDER BY id LIMIT ?",
                "SELECT COUNT(*) FROM " + p + FILTER,
                "SELECT id, topic, \"key\", attempts, reason, parked_at, create_time, \"value\", header_names,"
                        + " header_values, message_id FROM " + p + " WHERE id = ?",
                "SELECT DISTINCT \"key\" FROM " + p,
                "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM " + o + " LIMIT " + (SqlStore.EXACT_BACKLOG_LIMIT + 1)
                        + ") head), (SELECT MAX(id) - MIN(id) + 1 FROM " + o + ")",
                "SELECT COUNT(*) FROM " + p,
                "SELECT create_time, CURRENT_TIMESTAMP FROM " + o + " ORDER BY id LIMIT 1",
                "SELECT GENERATION_EXPRESSION FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = " + schema
                        + " AND TABLE_NAME = " + SqlTable.literal(t.names().table()) + " AND COLUMN_NAME IN ('shard',"
                        + " 'SHARD') AND IS_GENERATED = 'ALWAYS'");
    }
}
