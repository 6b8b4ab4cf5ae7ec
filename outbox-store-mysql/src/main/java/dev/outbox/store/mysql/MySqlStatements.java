package dev.outbox.store.mysql;

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
 * MySQL's and MariaDB's statements for one outbox table or one shard's view of it, as data: the shared ones
 * ({@link #shared}, run by {@code SqlStore}) and those of the mark, the read and the replay, which only this store
 * runs. Ids are bound as {@code IN} lists: {@code ${ids}} and {@code ${pairs}} stand for the placeholders that
 * {@link InLists} (or the shared {@code IdBinding}) writes for a chunk's size. Every locking read and {@code DELETE}
 * looks its rows up in the primary key by an index hint (see {@link #deleteSql}). A write is fenced by a locking read
 * of the leader row first ({@link SqlStatements#fenceLock()}): MySQL has no data-modifying CTE. Immutable and
 * thread-safe.
 *
 * @param candidates    the mark's first statement: a non-locking read of the ids at the head of the harvest's index
 * @param markLock      the mark's second: locks the candidates, reading their latest committed version
 * @param markUpdate    the mark's third: sets the leader id
 * @param readColumns   the read's {@code SELECT ... WHERE}, before its conditions ({@link #readSql})
 * @param readShard     the read's shard condition, {@code "shard = <i> AND "}, or empty
 * @param storedIds     the message ids the database holds for rows a read gave one
 * @param assignIds     stores new message ids in rows that have none
 * @param lockParked    the replay's lock of parked rows
 * @param replayedKeys  the replayed rows' keys and message ids
 * @param nameParked    stores a new message id in a parked row
 * @param replayInsert  copies parked rows to the outbox's tail, each with the header outbox-replayed
 * @param deleteParked  deletes parked rows
 * @param behind        locks the outbox rows of a key above an id
 * @param moveBehind    copies outbox rows to the tail
 * @param deleteOutbox  deletes outbox rows
 */
record MySqlStatements(String candidates, String markLock, String markUpdate, String readColumns, String readShard,
                       String storedIds, String assignIds, String lockParked, String replayedKeys, String nameParked,
                       String replayInsert, String deleteParked, String behind, String moveBehind,
                       String deleteOutbox) {

    /** The session's isolation for every transaction: no gap locks, so a mark never blocks an application insert. */
    static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
    /**
     * A replayed row's headers: its own (NULL or a JSON array, {@code HeadersJson}) with {@value KeySequence#REPLAYED}
     * appended, whose value is the parked row's id in ASCII decimal ({@link KeySequence#encode}), in base64.
     */
    private static final String REPLAYED_HEADERS = "JSON_ARRAY_APPEND(COALESCE(headers, JSON_ARRAY()), '$',"
            + " JSON_OBJECT('name', '" + KeySequence.REPLAYED + "', 'value', TO_BASE64(CAST(id AS CHAR))))";
    private static final String PARKED_SUMMARY = "id, topic, `key`, attempts, reason, UNIX_TIMESTAMP(parked_at),"
            + " message_id";
    /** The parked filter's 13 parameters. */
    private static final String PARKED_FILTER = " WHERE id > ? AND (? IS NULL OR topic = ?)"
            + " AND (? IS NULL OR `key` = ?) AND (? IS NULL OR LOCATE(?, reason) > 0)"
            + " AND (? IS NULL OR message_id = ?) AND (? IS NULL OR UNIX_TIMESTAMP(parked_at) >= ?)"
            + " AND (? IS NULL OR UNIX_TIMESTAMP(parked_at) < ?)";

    /** The statements only this store runs, for {@code t}. */
    static MySqlStatements of(SqlTable t) {
        String o = t.outbox();
        String p = t.parked();
        String shardAnd = t.isShard() ? "shard = " + t.shard() + " AND " : "";
        return new MySqlStatements(
                // A shard's view walks the (shard, id) index: its rows in id order, past no row of another shard.
                "SELECT id FROM " + o + " FORCE INDEX (" + harvestIndex(t) + ") WHERE " + shardAnd
                        + "leader_id <> ? ORDER BY id LIMIT ?",
                "SELECT " + RowReader.COLUMNS + " FROM " + o + " FORCE INDEX (PRIMARY) WHERE id IN (${ids})"
                        + " ORDER BY id FOR UPDATE",
                "UPDATE " + o + " SET leader_id = ? WHERE id IN (${ids})",
                "SELECT " + RowReader.COLUMNS + " FROM " + o + " FORCE INDEX (" + harvestIndex(t) + ") WHERE ",
                shardAnd,
                "SELECT id, message_id FROM " + o + " WHERE id IN (${ids})",
                "UPDATE " + o + " SET message_id = CASE id${pairs} END WHERE id IN (${ids}) AND message_id IS NULL",
                lockSql(p),
                "SELECT id, `key`, message_id FROM " + p + " WHERE id IN (${ids})",
                "UPDATE " + p + " SET message_id = ? WHERE id = ?",
                "INSERT INTO " + o + " (topic, `key`, value, headers, message_id) SELECT topic, `key`, value, "
                        + REPLAYED_HEADERS + ", message_id FROM " + p + " WHERE id IN (${ids}) ORDER BY id",
                deleteSql(p, t.names().parkedTable(), "${ids}"),
                "SELECT id, message_id FROM " + o + " FORCE INDEX (PRIMARY) WHERE id > ? AND `key` = ? ORDER BY id"
                        + " FOR UPDATE",
                "INSERT INTO " + o + " (create_time, topic, `key`, value, headers, message_id, attempts,"
                        + " next_attempt_at) SELECT create_time, topic, `key`, value, headers, message_id, attempts,"
                        + " next_attempt_at FROM " + o + " WHERE id IN (${ids}) ORDER BY id",
                deleteSql(o, t.names().table(), "${ids}"));
    }

    /**
     * The lease table's statements (leader election in the database): expiries are UTC {@code DATETIME(6)} values
     * compared with {@code UTC_TIMESTAMP(6)}, the database's clock at the statement's start, whatever the session's
     * time zone.
     */
    static SqlLeaseStatements lease(SqlTableNames names) {
        String l = names.lease();
        String later = "UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND";
        String schema = names.schema() == null ? "DATABASE()" : SqlTable.literal(names.schema());
        return new SqlLeaseStatements(
                List.of("CREATE TABLE IF NOT EXISTS " + l + " (id SMALLINT NOT NULL, holder CHAR(36) NULL,"
                        + " wanted_by CHAR(36) NULL, wanted_at DATETIME(6) NULL, expires_at DATETIME(6) NOT NULL,"
                        + " acquired_at DATETIME(6) NULL, PRIMARY KEY (id))"
                        + " ENGINE = InnoDB",
                        // a table of the first snapshot's layout gets the column: MySQL 8 has no ADD COLUMN IF NOT
                        // EXISTS, so the ALTER is chosen after a look at information_schema (DO 0 if it is there)
                        "SET @outbox_lease_ddl = (SELECT IF(COUNT(*) = 0, " + SqlTable.literal("ALTER TABLE " + l
                                + " ADD COLUMN wanted_at DATETIME(6) NULL") + ", 'DO 0')"
                                + " FROM information_schema.columns WHERE table_schema = " + schema
                                + " AND table_name = " + SqlTable.literal(names.leaseTable())
                                + " AND column_name = 'wanted_at')",
                        "PREPARE outbox_lease_ddl FROM @outbox_lease_ddl",
                        "EXECUTE outbox_lease_ddl",
                        "DEALLOCATE PREPARE outbox_lease_ddl"),
                "INSERT INTO " + l + " (id, expires_at) VALUES (?, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE id = id",
                "UPDATE " + l + " SET holder = ?, wanted_by = NULL, wanted_at = NULL, expires_at = " + later + ","
                        + " acquired_at = UTC_TIMESTAMP(6)"
                        + " WHERE id = ? AND (holder IS NULL OR expires_at < UTC_TIMESTAMP(6))",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE id = ? AND holder = ?"
                        + " AND expires_at >= UTC_TIMESTAMP(6)",
                "UPDATE " + l + " SET holder = NULL, expires_at = UTC_TIMESTAMP(6) WHERE id = ? AND holder = ?",
                "SELECT holder FROM " + l + " WHERE id = ? AND holder IS NOT NULL AND expires_at >= UTC_TIMESTAMP(6)",
                "SELECT id, CASE WHEN expires_at >= UTC_TIMESTAMP(6) THEN holder END, CASE WHEN wanted_at >="
                        + " UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND THEN wanted_by END FROM " + l
                        + " WHERE id >= 1 AND id <= ? ORDER BY id",
                "UPDATE " + l + " SET wanted_by = ?, wanted_at = UTC_TIMESTAMP(6) WHERE id = ? AND holder = ?"
                        + " AND expires_at >= UTC_TIMESTAMP(6) AND (wanted_by IS NULL OR wanted_by = ?"
                        + " OR wanted_at IS NULL OR wanted_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND)",
                "UPDATE " + l + " SET expires_at = " + later + " WHERE holder = ? AND expires_at >= UTC_TIMESTAMP(6)",
                "UPDATE " + l + " SET wanted_by = NULL, wanted_at = NULL WHERE wanted_by = ?");
    }

    /** The statements {@code SqlStore} runs, for {@code t}. */
    static SqlStatements shared(SqlTable t) {
        String o = t.outbox();
        String p = t.parked();
        String l = t.leader();
        String inShard = t.isShard() ? " WHERE shard = " + t.shard() : "";
        String schema = t.names().schema() == null ? "DATABASE()" : SqlTable.literal(t.names().schema());
        return new SqlStatements(READ_COMMITTED,
                SqlWrite.of(Step.of(Kind.IDS, deleteSql(o, t.names().table(), "${ids}"))),
                // attempts is assigned first: MySQL evaluates assignments left to right, and leader_id's expression
                // must see the row's leader id as it was.
                SqlWrite.of(Step.of(Kind.LEADER_THEN_IDS, "UPDATE " + o + " SET attempts = attempts + 1,"
                        + " leader_id = CASE WHEN leader_id = ? THEN " + MySqlStore.UNMARKED + " ELSE leader_id END"
                        + " WHERE id IN (${ids})")),
                SqlWrite.of(new Step(Kind.PAIRS, "UPDATE " + o + " SET attempts = attempts + 1,"
                        + " next_attempt_at = CASE id${pairs} END WHERE id IN (${ids})", " WHEN ? THEN FROM_UNIXTIME(?)")),
                SqlWrite.of(Step.of(Kind.LOCK, lockSql(o)),
                        new Step(Kind.PAIRS, "INSERT INTO " + p + " (id, create_time, topic, `key`, value, headers,"
                                + " leader_id, attempts, message_id, reason) SELECT id, create_time, topic, `key`, value,"
                                + " headers, leader_id, attempts, message_id, CASE id${pairs} END FROM " + o
                                + " WHERE id IN (${ids}) ORDER BY id", " WHEN ? THEN ?"),
                        Step.of(Kind.IDS, deleteSql(o, t.names().table(), "${ids}"))),
                SqlWrite.of(Step.of(Kind.IDS, deleteSql(p, t.names().parkedTable(), "${ids}"))),
                // Each shard has its epoch in a row of its own (shard + 1); a sharded outbox's whole store, row 0.
                List.of("INSERT INTO " + l + " (id, epoch) VALUES (" + t.leaderRow() + ", 1) ON DUPLICATE KEY UPDATE"
                                + " epoch = epoch + 1, acquired_at = CURRENT_TIMESTAMP(6)",
                        "SELECT epoch FROM " + l + " WHERE id = " + t.leaderRow()),
                // MariaDB has no FOR SHARE before 10.10; both servers take LOCK IN SHARE MODE.
                "SELECT epoch FROM " + l + " WHERE id = " + t.leaderRow() + " LOCK IN SHARE MODE",
                "SELECT " + PARKED_SUMMARY + " FROM " + p + " ORDER BY id LIMIT ?",
                "SELECT " + PARKED_SUMMARY + " FROM " + p + PARKED_FILTER + " ORDER BY id LIMIT ?",
                "SELECT COUNT(*) FROM " + p + PARKED_FILTER,
                "SELECT id, topic, `key`, attempts, reason, UNIX_TIMESTAMP(parked_at), UNIX_TIMESTAMP(create_time),"
                        + " value, headers, message_id FROM " + p + " WHERE id = ?",
                "SELECT DISTINCT `key` FROM " + p,
                "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM " + o + inShard + " LIMIT "
                        + (SqlStore.EXACT_BACKLOG_LIMIT + 1) + ") head), (SELECT " + (t.isShard()
                        ? "(MAX(id) - MIN(id) + 1) DIV " + t.shards() : "MAX(id) - MIN(id) + 1") + " FROM " + o
                        + inShard + ")",
                "SELECT COUNT(*) FROM " + p,
                "SELECT UNIX_TIMESTAMP(create_time), UNIX_TIMESTAMP(CURRENT_TIMESTAMP(6)) FROM " + o
                        + (t.isShard() ? " FORCE INDEX (" + harvestIndex(t) + ")" + inShard : "") + " ORDER BY id LIMIT 1",
                "SELECT generation_expression FROM information_schema.columns WHERE table_schema = " + schema
                        + " AND table_name = " + SqlTable.literal(t.names().table()) + " AND column_name = 'shard'"
                        + " AND generation_expression IS NOT NULL AND generation_expression <> ''");
    }

    /**
     * The read statement: {@code id > ?} if {@code head}, and {@code ranges} {@code BETWEEN}s, the lowest ids first.
     * {@code FORCE INDEX} keeps it a range scan of the harvest's index even when most of a small table matches.
     */
    String readSql(boolean head, int ranges) {
        StringBuilder where = new StringBuilder(head ? "id > ?" : "");
        for (int i = 0; i < ranges; i++) {
            where.append(where.length() == 0 ? "" : " OR ").append("id BETWEEN ? AND ?");
        }
        return readColumns + (readShard.isEmpty() ? where : readShard + "(" + where + ")") + " ORDER BY id LIMIT ?";
    }

    /**
     * {@code DELETE} of {@code count} ids of {@code table} ({@code name} unqualified), looked up in its primary key.
     * The index hint matters: on a table the optimizer believes small, a plain {@code DELETE ... WHERE id IN (...)}
     * scans the whole table, and at READ COMMITTED a {@code DELETE} (unlike an {@code UPDATE}, which reads
     * semi-consistently) waits for the lock of every row it scans, so it would wait for every application transaction
     * that has inserted a row and not yet committed. MySQL (8.0.20 and newer) takes the hint as an optimizer hint,
     * {@code INDEX(t PRIMARY)}, in the single-table form; MariaDB ignores optimizer hints and takes
     * {@code FORCE INDEX (PRIMARY)} only in the multi-table form, {@code DELETE t FROM t FORCE INDEX (PRIMARY) ...},
     * which MySQL turns into the single-table form, dropping the index hint. So the statement carries both, MariaDB's
     * parts in MariaDB-only executable comments ({@code /*M! ...}), which MySQL reads as comments. The ids stay an
     * {@code IN} list even where they run consecutively: {@code id BETWEEN ? AND ?} would be cheaper to parse, but a
     * range scan also locks the first record past the range's end, which may be an open writer's row (tried: the
     * purge then waited for the writer on both servers).
     */
    static String deleteSql(String table, String name, int count) {
        return InLists.in(deleteSql(table, name, "${ids}"), count);
    }

    private static String deleteSql(String table, String name, String ids) {
        return "DELETE /*+ INDEX(`" + name + "` PRIMARY) */ /*M! " + table + " */ FROM " + table
                + " /*M! FORCE INDEX (PRIMARY) */ WHERE id IN (" + ids + ")";
    }

    /** Locks the rows of {@code table} with the given ids, in ascending order, returning those that exist. */
    private static String lockSql(String table) {
        return "SELECT id FROM " + table + " FORCE INDEX (PRIMARY) WHERE id IN (${ids}) ORDER BY id FOR UPDATE";
    }

    /** The index the harvest walks: the primary key, or for a shard's view the {@code (shard, id)} index. */
    private static String harvestIndex(SqlTable t) {
        return t.isShard() ? "`" + t.names().table() + "_shard`" : "PRIMARY";
    }
}
