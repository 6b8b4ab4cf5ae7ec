package dev.outbox.store.postgres;

import dev.outbox.KeySequence;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlLeaseStatements;
import dev.outbox.store.sql.SqlStatements;
import dev.outbox.store.sql.SqlTable;
import dev.outbox.store.sql.SqlWrite;
import dev.outbox.store.sql.SqlWrite.Kind;
import dev.outbox.store.sql.SqlWrite.Step;

import java.util.List;

/**
 * Postgres' statements for one outbox table or one shard's view of it, as data: the shared ones ({@link #shared},
 * run by {@code SqlStore}) and those of the harvest and the replay, which only Postgres runs. Each batch write is one
 * statement over arrays ({@code = ANY(?)}, {@code unnest(?, ?)}); its fenced variant, written out in full, first
 * reads the leader row {@code FOR SHARE} in a CTE ({@code f}), changes rows only if the epoch is the writer's, and
 * returns the epoch it saw. Immutable and thread-safe.
 *
 * @param settings       every transaction's first statement: the statement timeout, local to the transaction
 * @param markSettings   the mark's: also no sequential scan (a stale estimate must not turn the walk of the primary
 *                       key's head into a scan and sort of the table)
 * @param readSettings   the read's: also no bitmap scan (PostgresMarkPlanTest)
 * @param mark           the mark: one {@code UPDATE ... WHERE id = ANY(ARRAY(SELECT ...)) RETURNING}
 * @param fencedMark     the mark fenced: the epoch seen first, then the marked rows (one row with no row when none)
 * @param read           the cursor read and its snapshot's transaction ids, in one statement
 * @param fillMessageIds stores a message id in rows older than the column, returning them
 * @param replayLock     waits for the table's writer transactions to end and keeps new ones from taking an id
 * @param replay         the replay (see {@link PostgresStore#replay})
 */
record PostgresStatements(String settings, String markSettings, String readSettings, String mark, String fencedMark,
                          String read, String fillMessageIds, String replayLock, String replay) {

    /** The columns of a row the harvest returns: {@link RowReader#COLUMNS} and the next attempt's time. */
    private static final String HARVESTED = RowReader.COLUMNS + ", next_attempt_at";
    /** The columns of a message that a replay moves. */
    private static final String PAYLOAD = "topic, key, value, header_names, header_values, message_id";
    /**
     * A replayed row's header names and values: its own with {@value KeySequence#REPLAYED} appended, whose value is
     * the parked row's id ({@code id}) in ASCII decimal ({@link KeySequence#encode}).
     */
    static final String REPLAYED_NAMES = "array_append(header_names, CAST('" + KeySequence.REPLAYED + "' AS text))";
    static final String REPLAYED_VALUES = "array_append(header_values, convert_to(CAST(id AS text), 'UTF8'))";
    /** {@link #PAYLOAD} of a replayed row, with {@link #REPLAYED_NAMES} and {@link #REPLAYED_VALUES}. */
    private static final String REPLAYED_PAYLOAD = "topic, key, value, " + REPLAYED_NAMES + " AS header_names, "
            + REPLAYED_VALUES + " AS header_values, message_id";
    private static final String PARKED_SUMMARY = "id, topic, key, attempts, reason, parked_at, message_id";
    /** The parked filter's 13 parameters, bound as text and cast by the server (a null needs no JDBC type). */
    private static final String PARKED_FILTER = " WHERE id > ? AND (CAST(? AS text) IS NULL OR topic = ?)"
            + " AND (CAST(? AS text) IS NULL OR key = ?) AND (CAST(? AS text) IS NULL OR strpos(reason, ?) > 0)"
            + " AND (CAST(? AS uuid) IS NULL OR message_id = CAST(? AS uuid))"
            + " AND (CAST(? AS timestamptz) IS NULL OR parked_at >= CAST(? AS timestamptz))"
            + " AND (CAST(? AS timestamptz) IS NULL OR parked_at < CAST(? AS timestamptz))";
    /** The epoch check that every fenced statement starts with: its first parameter is the writer's epoch. */
    private static final String FENCE = "WITH f AS (SELECT epoch, epoch = CAST(? AS bigint) AS ok FROM %s WHERE id = %d"
            + " FOR SHARE), ";
    private static final String SEEN = " SELECT (SELECT epoch FROM f)";

    /** The statements only Postgres runs, for {@code t}, with {@code uuidv7} the message-id function. */
    static PostgresStatements of(SqlTable t, String uuidv7) {
        String o = t.outbox();
        String settings = settings(t);
        String markSettings = settings + ", set_config('enable_seqscan', 'off', true)";
        // A row without a message id (written before the column existed) gets one now, stored before it is sent.
        String markUpdate = "UPDATE " + o + " SET leader_id = ?, message_id = COALESCE(message_id, " + uuidv7 + "())"
                + " WHERE id = ANY(ARRAY(SELECT id FROM " + o + (t.isShard()
                ? " WHERE " + shardWalk(t) + "(leader_id IS NULL OR leader_id <> ?)"
                : " WHERE leader_id IS NULL OR leader_id <> ?") + " ORDER BY " + shardOrder(t) + "id LIMIT ?))";
        String mark = markUpdate + " RETURNING " + HARVESTED;
        String fencedMark = fence(t) + "m AS (" + markUpdate + " AND (SELECT ok FROM f) RETURNING " + HARVESTED
                + ") SELECT (SELECT epoch FROM f), m.* FROM (SELECT 1) AS one LEFT JOIN m ON true";
        // One statement, so that its rows and its snapshot's transaction ids come from the same snapshot: at READ
        // COMMITTED every statement takes its own snapshot, and pg_current_snapshot() is the running statement's (on
        // a connection that defaults to REPEATABLE READ, both are the transaction's, taken by the settings statement
        // just before: the same holds). Tested: PostgresStoreReadTest.
        // The first branch walks the primary key from the cursor and stops after `limit` rows; the gaps are read by
        // a nested loop (LATERAL) of index range scans, one per range, so neither branch scans the table. The last
        // ORDER BY sorts at most limit + (rows in gaps) rows (a merge of the two branches when there is no gap). The
        // outer query has no ORDER BY: the rows are put in id order in memory, and a sort there would copy every
        // row, headers and value included, once more inside the server (PostgresMarkPlanTest checks it stays out).
        // age('3'::xid) is read once per transaction, at its first call, which is here, after the snapshot was
        // taken: see PostgresHarvest.gapToken.
        String read = "SELECT s.horizon, s.xmax, s.age3, r.* FROM (SELECT"
                + " CAST(CAST(pg_snapshot_xmin(c) AS text) AS bigint) AS horizon,"
                + " CAST(CAST(pg_snapshot_xmax(c) AS text) AS bigint) AS xmax,"
                + " age(CAST('3' AS xid)) AS age3 FROM pg_current_snapshot() AS c) AS s"
                + " LEFT JOIN ((SELECT " + HARVESTED + " FROM " + o + " WHERE " + shardWalk(t) + "id > ? ORDER BY "
                + shardOrder(t) + "id LIMIT ?)"
                + " UNION ALL (SELECT g.* FROM unnest(CAST(? AS bigint[]), CAST(? AS bigint[])) AS r(lo, hi),"
                + " LATERAL (SELECT " + HARVESTED + " FROM " + o + " WHERE " + shardAnd(t)
                + "id BETWEEN r.lo AND LEAST(r.hi, ?)) AS g)"
                + " ORDER BY id LIMIT ?) AS r ON true";
        String fillMessageIds = "UPDATE " + o + " SET message_id = COALESCE(message_id, " + uuidv7 + "())"
                + " WHERE id = ANY(?) RETURNING " + HARVESTED;
        // The parked rows go back at the tail, each with the header outbox-replayed (its parked id), then each replayed key's outbox rows above its first replayed row's
        // parked id are moved behind them (new ids, same order): a key's order survives the replay (held keys,
        // Store.replay). Run after the replay lock, so that no writer transaction holding an id is still open.
        String replay = "WITH moved AS (DELETE FROM " + t.parked() + " WHERE id = ANY(?) RETURNING id, " + PAYLOAD
                + "), first AS (SELECT key, min(id) AS id FROM moved GROUP BY key),"
                + " behind AS (DELETE FROM " + o + " o USING first f WHERE o.key = f.key AND o.id > f.id"
                + " RETURNING o.id, o.create_time, " + prefixed("o", PAYLOAD) + ", o.attempts, o.next_attempt_at),"
                + " inserted AS (INSERT INTO " + o + " (create_time, " + PAYLOAD + ", attempts, next_attempt_at)"
                + " SELECT create_time, " + PAYLOAD + ", attempts, next_attempt_at FROM ("
                + "SELECT 0 AS part, id, now() AS create_time, " + REPLAYED_PAYLOAD + ", 0 AS attempts,"
                + " CAST(NULL AS timestamptz) AS next_attempt_at FROM moved"
                + " UNION ALL SELECT 1, id, create_time, " + PAYLOAD + ", attempts, next_attempt_at FROM behind) x"
                + " ORDER BY part, id RETURNING 1)"
                + " SELECT count(*) FROM moved";
        // Waits for every writer transaction of the table to end (it holds ROW EXCLUSIVE), and keeps new ones from
        // taking an id until the replay commits, bounded by the statement timeout. Without it, a writer that took an
        // id below the replayed rows and committed just after the replay would slip ahead of them.
        String replayLock = "LOCK TABLE " + o + " IN SHARE ROW EXCLUSIVE MODE";
        return new PostgresStatements(settings, markSettings,
                markSettings + ", set_config('enable_bitmapscan', 'off', true)", mark, fencedMark, read,
                fillMessageIds, replayLock, replay);
    }

    /** The statements {@code SqlStore} runs, for {@code t}. */
    static SqlStatements shared(SqlTable t) {
        String o = t.outbox();
        String p = t.parked();
        String l = t.leader();
        String purge = "DELETE FROM " + o + " WHERE id = ANY(?)";
        String reset = "UPDATE " + o + " SET attempts = attempts + 1,"
                + " leader_id = CASE WHEN leader_id = ? THEN NULL ELSE leader_id END WHERE id = ANY(?)";
        String retryLater = "UPDATE " + o + " o SET attempts = o.attempts + 1, next_attempt_at = r.at"
                + " FROM unnest(CAST(? AS bigint[]), CAST(CAST(? AS text[]) AS timestamptz[])) AS r(id, at)"
                + " WHERE o.id = r.id";
        String reasons = "reasons AS (SELECT * FROM unnest(CAST(? AS bigint[]), CAST(? AS text[])) AS r(id, reason))";
        String moved = "moved AS (DELETE FROM " + o + " o USING reasons r WHERE o.id = r.id";
        String movedColumns = " RETURNING " + prefixed("o", RowReader.COLUMNS) + ", r.reason)";
        String insertParked = "INSERT INTO " + p + " (" + RowReader.COLUMNS + ", reason, parked_at)"
                + " SELECT " + RowReader.COLUMNS + ", reason, now() FROM moved";
        String park = "WITH " + reasons + ", " + moved + movedColumns + " " + insertParked;
        String fencedPark = fence(t) + reasons + ", " + moved + " AND (SELECT ok FROM f)" + movedColumns
                + ", i AS (" + insertParked + " RETURNING 1)" + SEEN;
        // A shard's estimate is the table's over the shard count: md5 spreads the keys, if not their rows, evenly.
        String backlog = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + o
                + (t.isShard() ? " WHERE shard = " + t.shard() : "") + " LIMIT "
                + (dev.outbox.store.sql.SqlStore.EXACT_BACKLOG_LIMIT + 1) + ") head),"
                + " (SELECT CASE WHEN c.relpages > 0 AND c.reltuples > 0"
                + " THEN c.reltuples / c.relpages * (pg_relation_size(c.oid) / CAST(current_setting('block_size') AS int))"
                + (t.isShard() ? " / " + t.shards() : "")
                + " ELSE 0 END FROM pg_class c WHERE c.oid = to_regclass(" + SqlTable.literal(o) + "))";
        String oldest = "SELECT create_time, clock_timestamp() FROM " + o
                + (t.isShard() ? " WHERE shard >= " + t.shard() + " AND shard <= " + t.shard() : "")
                + " ORDER BY " + shardOrder(t) + "id LIMIT 1";
        return new SqlStatements(settings(t),
                SqlWrite.of(Step.of(Kind.IDS, purge), fenced(t, "d AS (" + purge + " AND (SELECT ok FROM f) RETURNING 1)")),
                SqlWrite.of(Step.of(Kind.LEADER_THEN_IDS, reset),
                        fenced(t, "u AS (" + reset + " AND (SELECT ok FROM f) RETURNING 1)")),
                SqlWrite.of(Step.of(Kind.PAIRS, retryLater),
                        fenced(t, "u AS (" + retryLater + " AND (SELECT ok FROM f) RETURNING 1)")),
                SqlWrite.of(Step.of(Kind.PAIRS, park), fencedPark),
                SqlWrite.of(Step.of(Kind.IDS, "DELETE FROM " + p + " WHERE id = ANY(?)")),
                // Each shard has its epoch in a row of its own (shard + 1); a sharded outbox's whole store, row 0.
                List.of("INSERT INTO " + l + " (id, epoch) VALUES (" + t.leaderRow() + ", 1) ON CONFLICT (id) DO"
                        + " UPDATE SET epoch = " + l + ".epoch + 1, acquired_at = now() RETURNING epoch"),
                null,
                "SELECT " + PARKED_SUMMARY + " FROM " + p + " ORDER BY id LIMIT ?",
                "SELECT " + PARKED_SUMMARY + " FROM " + p + PARKED_FILTER + " ORDER BY id LIMIT ?",
                "SELECT count(*) FROM " + p + PARKED_FILTER,
                "SELECT id, topic, key, attempts, reason, parked_at, create_time, value, header_names,"
                        + " header_values, message_id FROM " + p + " WHERE id = ?",
                "SELECT DISTINCT key FROM " + p,
                backlog,
                "SELECT count(*) FROM " + p,
                oldest,
                "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_attrdef d"
                        + " ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = to_regclass("
                        + SqlTable.literal(o) + ") AND a.attname = 'shard' AND a.attgenerated = 's'"
                        + " AND NOT a.attisdropped");
    }

    /**
     * The lease table's statements (leader election in the database): expiries are {@code timestamptz}, compared with
     * {@code now()}, the database's clock at the transaction's start (never later than the instance's request).
     */
    static SqlLeaseStatements lease(SqlTableNames names) {
        String l = names.lease();
        String later = "now() + CAST(? AS bigint) * interval '1 microsecond'";
        return new SqlLeaseStatements(
                List.of("CREATE TABLE IF NOT EXISTS " + l + " (id smallint PRIMARY KEY, holder text,"
                        + " wanted_by text, wanted_at timestamptz, expires_at timestamptz NOT NULL,"
                        + " acquired_at timestamptz)",
                        // a table of the first snapshot's layout gets the column; idempotent
                        "ALTER TABLE " + l + " ADD COLUMN IF NOT EXISTS wanted_at timestamptz"),
                "INSERT INTO " + l + " (id, expires_at) VALUES (?, now()) ON CONFLICT (id) DO NOTHING",
                "UPDATE " + l + " SET holder = ?, wanted_by = NULL, wanted_at = NULL, expires_at = " + later + ","
                        + " acquired_at = now()"
                        + " WHERE id = ? AND (holder IS NULL OR expires_at < now())",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE id = ? AND holder = ? AND expires_at >= now()",
                "UPDATE " + l + " SET holder = NULL, expires_at = now() WHERE id = ? AND holder = ?",
                "SELECT holder FROM " + l + " WHERE id = ? AND holder IS NOT NULL AND expires_at >= now()",
                "SELECT id, CASE WHEN expires_at >= now() THEN holder END, CASE WHEN wanted_at >= now()"
                        + " - CAST(? AS bigint) * interval '1 microsecond' THEN wanted_by END FROM " + l
                        + " WHERE id >= 1 AND id <= ? ORDER BY id",
                "UPDATE " + l + " SET wanted_by = ?, wanted_at = now() WHERE id = ? AND holder = ?"
                        + " AND expires_at >= now() AND (wanted_by IS NULL OR wanted_by = ? OR wanted_at IS NULL"
                        + " OR wanted_at < now() - CAST(? AS bigint) * interval '1 microsecond')",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE holder = ? AND expires_at >= now()",
                "UPDATE " + l + " SET wanted_by = NULL, wanted_at = NULL WHERE wanted_by = ?");
    }

    /** The transaction's statement timeout, a number formatted here, never user text. */
    static String settings(SqlTable t) {
        return "SELECT set_config('statement_timeout', '" + t.statementTimeout().toMillis() + "', true)";
    }

    /** The fence CTE of {@code t}'s leader row, then {@code write} (a CTE) and the epoch seen. */
    private static String fenced(SqlTable t, String write) {
        return fence(t) + write + SEEN;
    }

    private static String fence(SqlTable t) {
        return String.format(FENCE, t.leader(), t.leaderRow());
    }

    /**
     * {@code "shard, "} for a shard's view: the walks in id order (mark, read, oldest) order by {@code (shard, id)},
     * the same order as by id within one shard, with the shard as a range ({@link #shardWalk}), so that only the
     * {@code (shard, id)} index yields that order without a sort. With {@code shard = <i>} the planner drops the
     * shard from the order (it is constant) and may walk the primary key with a filter instead: that walks every row
     * of the other shards in front of this shard's first row (PostgresShardsTest).
     */
    private static String shardOrder(SqlTable t) {
        return t.isShard() ? "shard, " : "";
    }

    /** {@code "shard >= <i> AND shard <= <i> AND "} for a shard's view (see {@link #shardOrder}); else empty. */
    private static String shardWalk(SqlTable t) {
        return t.isShard() ? "shard >= " + t.shard() + " AND shard <= " + t.shard() + " AND " : "";
    }

    /** {@code "shard = <i> AND "} for a shard's view; else empty. */
    private static String shardAnd(SqlTable t) {
        return t.isShard() ? "shard = " + t.shard() + " AND " : "";
    }

    /** {@code columns}, each qualified by {@code alias}. */
    private static String prefixed(String alias, String columns) {
        StringBuilder out = new StringBuilder();
        for (String column : columns.split(",\\s*")) {
            if (out.length() > 0) {
                out.append(", ");
            }
            out.append(alias).append('.').append(column);
        }
        return out.toString();
    }
}
