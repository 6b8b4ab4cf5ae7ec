package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.StoreException;
import dev.outbox.spi.StreamHarvest;
import dev.outbox.spi.CommitStream;
import dev.outbox.store.sql.SqlStore;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.argument.Argument;

import javax.sql.DataSource;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The outbox on PostgreSQL (13 or newer): a {@link Store} on Jdbi 3 and the official JDBC driver.
 *
 * <pre>{@code
 * PostgresStore store = PostgresStore.builder(dataSource)   // or builder(jdbi)
 *         .schema("app")                                   // optional: default is the search_path
 *         .table("outbox")                                 // default "outbox"; parked rows go to "outbox_parked"
 *         .build();
 * store.createSchema();                                    // idempotent; or run schemaSql() with your migrations
 * }</pre>
 *
 * <h2>Statements</h2>
 * <ul>
 *   <li><b>read</b> (the cursor harvest's, {@link #read}) is one {@code SELECT} that changes nothing and locks no
 *       row: {@code (SELECT ... WHERE id > ? ORDER BY id LIMIT ?) UNION ALL (the rows in each recheck range, by a
 *       LATERAL index range scan per range) ORDER BY id LIMIT ?}, joined to one row of its own snapshot's transaction
 *       ids (see <em>Late commits</em> below). Postgres cannot walk an index in order for an {@code OR} of the two
 *       conditions, hence the union; its first branch walks the primary key from the cursor and stops at the limit.
 *       The read's transaction switches off sequential and bitmap scans ({@code SET LOCAL}), so that a stale row
 *       estimate cannot turn that walk into a scan and sort of every row above the cursor. Rows written before the
 *       {@code message_id} column get theirs stored by a second statement in the same transaction, only when the
 *       read returned such rows.</li>
 *   <li><b>mark</b> (the MARK harvest's) is one statement:
 *       {@code UPDATE t SET leader_id = ? WHERE id = ANY(ARRAY(SELECT id FROM t WHERE leader_id IS NULL OR
 *       leader_id <> ? ORDER BY id LIMIT ?)) RETURNING ...}. The array is computed once, by an ordered scan of
 *       the primary key, and the update then fetches exactly those ids through the index. The textbook form
 *       {@code WHERE id IN (SELECT ...)} is planned as a join, which a stale row estimate (an emptied table
 *       that filled up again before it was analysed) turns into a nested loop over the whole table: seconds
 *       instead of milliseconds per mark. The mark's transaction also switches off sequential scans
 *       ({@code SET LOCAL enable_seqscan = off}) so that a stale estimate cannot turn the head-of-table scan into
 *       a full scan and sort either.</li>
 *   <li><b>purge</b>, <b>reset</b>, <b>park</b> and <b>replay</b> each take all their ids as one array
 *       ({@code = ANY(?)}): one statement, one round trip per batch. Park and replay move rows between the
 *       outbox and the parked table with one statement ({@code WITH moved AS (DELETE ... RETURNING ...) INSERT
 *       ...}), so a row is never in both tables or in neither.</li>
 * </ul>
 * Each call runs in its own short transaction on a connection from the {@link Jdbi} (or data source) at the
 * isolation level the connection has by default, which should be Postgres' default, READ COMMITTED.
 *
 * <h2>Late commits</h2>
 * Ids are taken at insert, rows become visible at commit, so a read can pass an id whose row commits later (a gap).
 * The table's id default takes the writer's transaction id <em>before</em> the sequence value ({@code CASE WHEN
 * pg_current_xact_id() IS NOT NULL THEN nextval(...) END}; see {@link #schemaSql()}). A transaction that holds an
 * id below the highest id a read returned therefore took its transaction id before that row's id was taken, hence
 * before the read's snapshot. Each read reports, from its one snapshot: {@link ReadResult#gapToken()}, the next
 * transaction id not yet assigned at the snapshot (above every such writer's id; see the comment of
 * {@code gapToken}), and {@link ReadResult#horizon()}, the snapshot's {@code xmin} (every transaction below it had
 * ended). A gap passed by a read with token {@code T} is final once a later read's horizon is at least {@code T}:
 * every transaction that could hold it has ended, and had it committed, that read would have seen it. A
 * long-running transaction that has a transaction id (in any database of the server) holds every later horizon
 * back, so gaps stay open and are reread until it ends; a writer that takes its id by hand ({@code nextval} in its
 * {@code INSERT}) escapes the rule, and its late row may be skipped until the dispatcher's rescan.
 *
 * <h2>Concurrent marks</h2>
 * A mark only returns committed rows and never waits for, or blocks, transactions that insert rows: it locks
 * only the existing rows it updates. Two marks by different leaders that run at the same time pick their ids
 * from their own snapshots; where they pick the same row, the second waits for the first to commit and then
 * takes the row over (at READ COMMITTED, the update re-checks only {@code id = ANY(...)}, which still holds): a
 * new leader steals the rows of an old one, and the rows end up with the leader id of the mark that committed
 * last. {@code FOR UPDATE SKIP LOCKED} would be wrong here: a new leader must take over the rows an old leader
 * still holds. Rows are locked in ascending id order, so concurrent marks, purges and resets do not deadlock
 * one another in practice; if the database reports a deadlock or serialization failure anyway, the call fails
 * with a retriable {@link StoreException} and changed nothing.
 *
 * <h2>Timeouts</h2>
 * Every statement runs under the configured {@link Builder#statementTimeout statement timeout} (set with
 * {@code SET LOCAL statement_timeout}, so it also bounds lock waits), and while the store uses a connection it
 * sets the connection's network timeout to twice the statement timeout, so that even a silent network failure
 * ends the call. Both are restored before the connection is returned.
 *
 * <h2>Rows written by hand</h2>
 * Any language may write messages with a plain {@code INSERT} (see {@link PostgresPublisher#insertSql()}). A row
 * that is not a valid message (header arrays of different lengths, a NULL header name, an invalid topic, a key
 * longer than {@link Builder#maxKeyLength}) is marked like any other and returned in {@link
 * MarkResult#rejected()} with a reason naming the bad value, so the dispatcher parks it; other rows and keys
 * carry on.
 *
 * <h2>Storage fencing</h2>
 * With {@link Builder#fencing} on (the default) and the table harvest, the leader table ({@code <table>_leader}, one
 * row) holds the outbox's leader epoch. {@link #acquireEpoch()} increments it with an upsert, whose {@code UPDATE}
 * takes the row's lock; every write of a {@linkplain #fencedBy fenced view} (mark, purge, reset, failure record,
 * park) is one statement that first reads the row {@code FOR SHARE} in a CTE and changes rows only if the epoch is
 * its own, and returns the epoch it saw. The increment and the fenced writes serialize on the row: a write that
 * locked it first commits before the increment can, and one that waited for the increment re-reads the row after it
 * committed (READ COMMITTED) and changes nothing; it then fails with {@link dev.outbox.spi.StoreFencedException}.
 * The WAL harvest is not fenced here: its slot already admits one reader at a time.
 *
 * <h2>Shards</h2>
 * With {@link Builder#shards shards(n)} above 1, the DDL adds a stored generated column {@code shard} (the md5 of the
 * key modulo n, {@link dev.outbox.OutboxShards#shardOf}) and an index on {@code (shard, id)}; {@link #shard}{@code (i)}
 * is this store with {@code shard} in the conditions of its mark, read, backlog and oldest create time, and its epoch
 * in row {@code i + 1} of the leader table. The store refuses a table made for another count
 * ({@link #checkShards()}); {@link #reshard()} changes a table's count while no dispatcher runs. See the README's
 * "Sharded harvest".
 *
 * <h2>The WAL harvest</h2>
 * With {@link Builder#walHarvest(WalHarvest)} the outbox lives in the write-ahead log instead of the table: the
 * {@link #publisher()} emits each message as a transactional logical message (format: {@code WalCodec}), and the
 * leader streams the committed messages in commit order from a logical replication slot ({@code PgOutputStream})
 * into a {@link StreamHarvest}: {@link #read} returns them, {@link #purge} confirms the slot as far as every earlier
 * message is finished, {@link #park} writes them to the parked table (under their WAL position as id) and
 * {@link #replay} re-emits parked messages. {@link #mark} is not supported: harvest it by cursor (the default).
 * The table is still created (an operator may switch back), and the parked table is shared by both harvests.
 *
 * <p>Immutable and thread-safe.
 */
public final class PostgresStore extends SqlStore {
    /** Serializes concurrent {@link #createSchema()} calls: {@code CREATE TABLE IF NOT EXISTS} races otherwise. */
    private static final long SCHEMA_LOCK_KEY = 0x6F7574626F78L; // "outbox"

    /** The in-place upgrade of tables created before message ids. */
    static final String UPGRADE_RESOURCE = "dev/outbox/store/postgres/upgrade-message-id.sql";
    /** The in-place upgrade of tables created before per-key retries (the next_attempt_at column). */
    static final String UPGRADE_NEXT_ATTEMPT_RESOURCE = "dev/outbox/store/postgres/upgrade-next-attempt.sql";
    /** The message-id function's name, in the outbox's schema. */
    static final String UUIDV7_FUNCTION = "outbox_uuidv7";

    private final PostgresPublisher publisher;
    private final String uuidv7;

    /** The WAL harvest's settings, or null when the table is harvested. */
    private final WalHarvest wal;
    /** The WAL harvest's messages in memory, or null when the table is harvested. */
    private final StreamHarvest streamed;
    /** The WAL harvest's message prefix, slot and publication; null when the table is harvested. */
    private final String walPrefix;
    private final String slot;
    private final String publication;
    /**
     * Plain connections as the WAL harvest's user (its URL and properties, without replication): for the slot's
     * creation, its state and the take-over of a deposed leader's stream. Null when the table is harvested.
     */
    private final DataSource walConnections;
    private final String walParkSql;
    private final String ledgerDdl;
    /** The channel the publisher notifies and the leader listens on; null when commit notifications are off. */
    private final String notifyChannel;
    private final String saveLedgerSql;
    private final String loadLedgerSql;
    private final String walReplaySql;
    private final String retainedSql;

    private final String settingsSql;
    private final String markSettingsSql;
    private final String readSettingsSql;
    private final String markSql;
    private final String readSql;
    private final String fillMessageIdsSql;
    private final String purgeSql;
    private final String resetSql;
    private final String retryLaterSql;
    private final String parkSql;
    private final String parkedSql;
    private final String replaySql;
    private final String replayLockSql;
    private final String parkedKeysSql;
    private final String backlogSql;
    private final String parkedCountSql;
    private final String oldestSql;
    private final String parkedFilter;
    private final String parkedMessageSql;
    private final String discardSql;
    private final String takeEpochSql;
    private final String fencedMarkSql;
    private final String fencedPurgeSql;
    private final String fencedResetSql;
    private final String fencedRetryLaterSql;
    private final String fencedParkSql;
    /** The whole outbox, for the view of one shard; null for the whole outbox itself. */
    private final PostgresStore whole;
    /** The views of the shards ({@link #shard}), for a sharded whole outbox; empty otherwise. */
    private final List<PostgresStore> views;
    private final String shardExpressionSql;
    /** The one listening connection of a sharded whole outbox's shard harvests; null otherwise. */
    private final SharedCommitWatch sharedListener;

    private PostgresStore(Builder builder) {
        this(builder, -1, null);
    }

    private PostgresStore(Builder builder, int shard, PostgresStore whole) {
        super(builder, shard);
        this.whole = whole;
        if (builder.wal != null && shardCount() > 1) {
            throw new IllegalStateException("the WAL harvest cannot be sharded (shards(" + shardCount() + ")): it"
                    + " streams the outbox from one replication slot, read by one leader; use the table harvest"
                    + " (no walHarvest) to shard, or shards(1)");
        }
        this.wal = builder.wal;
        this.walPrefix = wal == null ? null : WalSql.prefix(names);
        this.notifyChannel = wal == null && builder.commitNotifications
                ? PgCommitListener.channel(names.schema(), names.table()) : null;
        this.publisher = whole != null ? whole.publisher : new PostgresPublisher(names, maxKeyLength(),
                queryTimeoutSeconds(), decorators(), walPrefix, notifyChannel);
        if (whole == null) {
            wakeOnCommitted(publisher);
        }
        this.slot = wal == null ? null : wal.slot() != null ? wal.slot() : defaultSlot(wal.url(), names);
        this.publication = wal == null ? null : wal.publication() != null ? wal.publication()
                : names.table() + "_publication";
        this.streamed = wal == null ? null : new StreamHarvest(this::openStream, this::decode, wal.readWait(),
                new StreamHarvest.Ledger() {
                    @Override
                    public long append(Map<Long, Long> finished) {
                        return appendLedger(finished);
                    }

                    @Override
                    public Map<Long, Long> load() {
                        return loadLedger();
                    }
                });
        this.walConnections = wal == null ? null : plainConnections(wal);

        String t = names.outbox();
        String p = names.parked();
        // The schema name was validated ([a-z_][a-z0-9_]*), so quoting it is enough.
        this.uuidv7 = (names.schema() == null ? "" : '"' + names.schema() + "\".") + UUIDV7_FUNCTION;
        // The timeout is a number we formatted ourselves, never user text.
        this.settingsSql = "SELECT set_config('statement_timeout', '" + statementTimeout().toMillis() + "', true)";
        this.markSettingsSql = settingsSql + ", set_config('enable_seqscan', 'off', true)";
        // A stale estimate of a few rows makes a bitmap scan of every row above the cursor, then a sort, look
        // cheaper than walking the primary key in order and stopping at the limit (PostgresMarkPlanTest).
        this.readSettingsSql = markSettingsSql + ", set_config('enable_bitmapscan', 'off', true)";
        // A row without a message id (written before the column existed) gets one now, stored before it is sent.
        this.markSql = "UPDATE " + t + " SET leader_id = ?, message_id = COALESCE(message_id, " + uuidv7 + "())"
                + " WHERE id = ANY(ARRAY(SELECT id FROM " + t
                + (shard < 0 ? " WHERE leader_id IS NULL OR leader_id <> ?"
                : " WHERE " + shardWalk() + "(leader_id IS NULL OR leader_id <> ?)") + " ORDER BY " + shardOrder()
                + "id LIMIT ?))"
                + " RETURNING " + RowReader.COLUMNS + ", next_attempt_at";
        // One statement, so that its rows and its snapshot's transaction ids come from the same snapshot: at READ
        // COMMITTED every statement takes its own snapshot, and pg_current_snapshot() is the running statement's (on
        // a connection that defaults to REPEATABLE READ, both are the transaction's, taken by the settings statement
        // just before: the same holds). Tested: PostgresStoreReadTest.
        // The first branch walks the primary key from the cursor and stops after `limit` rows; the gaps are read
        // by a nested loop (LATERAL) of index range scans, one per range, so neither branch scans the table. The
        // last ORDER BY sorts at most limit + (rows in gaps) rows (a merge of the two branches when there is no gap).
        // The outer query has no ORDER BY: the rows are put in id order in memory (a TreeMap), and a sort there
        // would copy every row, headers and value included, once more inside the server (a third of the server's time
        // per row in the read, more with larger rows: PostgresMarkPlanTest checks it stays out). age('3'::xid) is read
        // once per transaction, at its first call, which is here, after the snapshot was taken: see gapToken().
        String columns = RowReader.COLUMNS + ", next_attempt_at";
        this.readSql = "SELECT s.horizon, s.xmax, s.age3, r.* FROM (SELECT"
                + " CAST(CAST(pg_snapshot_xmin(c) AS text) AS bigint) AS horizon,"
                + " CAST(CAST(pg_snapshot_xmax(c) AS text) AS bigint) AS xmax,"
                + " age(CAST('3' AS xid)) AS age3 FROM pg_current_snapshot() AS c) AS s"
                + " LEFT JOIN ((SELECT " + columns + " FROM " + t + " WHERE " + shardWalk() + "id > ? ORDER BY " + shardOrder()
                + "id LIMIT ?)"
                + " UNION ALL (SELECT g.* FROM unnest(CAST(? AS bigint[]), CAST(? AS bigint[])) AS r(lo, hi),"
                + " LATERAL (SELECT " + columns + " FROM " + t + " WHERE " + shardAnd()
                + "id BETWEEN r.lo AND LEAST(r.hi, ?)) AS g)"
                + " ORDER BY id LIMIT ?) AS r ON true";
        // Rows older than the message_id column get theirs before they are returned (as the mark does).
        this.fillMessageIdsSql = "UPDATE " + t + " SET message_id = COALESCE(message_id, " + uuidv7 + "())"
                + " WHERE id = ANY(?) RETURNING " + columns;
        this.purgeSql = "DELETE FROM " + t + " WHERE id = ANY(?)";
        this.resetSql = "UPDATE " + t + " SET attempts = attempts + 1,"
                + " leader_id = CASE WHEN leader_id = ? THEN NULL ELSE leader_id END"
                + " WHERE id = ANY(?)";
        this.retryLaterSql = "UPDATE " + t + " o SET attempts = o.attempts + 1, next_attempt_at = r.at"
                + " FROM unnest(CAST(? AS bigint[]), CAST(CAST(? AS text[]) AS timestamptz[])) AS r(id, at)"
                + " WHERE o.id = r.id";
        this.parkSql = "WITH reasons AS (SELECT * FROM unnest(CAST(? AS bigint[]), CAST(? AS text[])) AS r(id, reason)),"
                + " moved AS (DELETE FROM " + t + " o USING reasons r WHERE o.id = r.id RETURNING "
                + prefixed("o", RowReader.COLUMNS) + ", r.reason)"
                + " INSERT INTO " + p + " (" + RowReader.COLUMNS + ", reason, parked_at)"
                + " SELECT " + RowReader.COLUMNS + ", reason, now() FROM moved";
        this.parkedSql = "SELECT id, topic, key, attempts, reason, parked_at, message_id FROM " + p
                + " ORDER BY id LIMIT ?";
        // Replay: the parked rows go back at the tail, then each replayed key's outbox rows above its first replayed
        // row's parked id are moved behind them (new ids, same order): a key's order survives the replay (held keys,
        // Store.replay). Run after replayLockSql, so that no writer transaction holding an id is still open.
        String payload = "topic, key, value, header_names, header_values, message_id";
        this.replaySql = "WITH moved AS (DELETE FROM " + p + " WHERE id = ANY(?) RETURNING id, " + payload + "),"
                + " first AS (SELECT key, min(id) AS id FROM moved GROUP BY key),"
                + " behind AS (DELETE FROM " + t + " o USING first f WHERE o.key = f.key AND o.id > f.id"
                + " RETURNING o.id, o.create_time, " + prefixed("o", payload) + ", o.attempts, o.next_attempt_at),"
                + " inserted AS (INSERT INTO " + t + " (create_time, " + payload + ", attempts, next_attempt_at)"
                + " SELECT create_time, " + payload + ", attempts, next_attempt_at FROM ("
                + "SELECT 0 AS part, id, now() AS create_time, " + payload + ", 0 AS attempts,"
                + " CAST(NULL AS timestamptz) AS next_attempt_at FROM moved"
                + " UNION ALL SELECT 1, id, create_time, " + payload + ", attempts, next_attempt_at FROM behind) x"
                + " ORDER BY part, id RETURNING 1)"
                + " SELECT count(*) FROM moved";
        // Waits for every writer transaction of the table to end (it holds ROW EXCLUSIVE), and keeps new ones from
        // taking an id until the replay commits, bounded by the statement timeout. Without it, a writer that took an
        // id below the replayed rows and committed just after the replay would slip ahead of them.
        this.replayLockSql = "LOCK TABLE " + t + " IN SHARE ROW EXCLUSIVE MODE";
        this.parkedKeysSql = "SELECT DISTINCT key FROM " + p;
        // A shard's estimate is the table's over the shard count: md5 spreads the keys, if not their rows, evenly.
        this.backlogSql = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + t
                + (shard < 0 ? "" : " WHERE shard = " + shard) + " LIMIT "
                + (EXACT_BACKLOG_LIMIT + 1) + ") head),"
                + " (SELECT CASE WHEN c.relpages > 0 AND c.reltuples > 0"
                + " THEN c.reltuples / c.relpages * (pg_relation_size(c.oid) / CAST(current_setting('block_size') AS int))"
                + (shard < 0 ? "" : " / " + shardCount())
                + " ELSE 0 END FROM pg_class c WHERE c.oid = to_regclass(?))";
        this.parkedCountSql = "SELECT count(*) FROM " + names.parked();
        this.oldestSql = "SELECT create_time FROM " + names.outbox()
                + (shard < 0 ? "" : " WHERE " + shardWalk().replaceFirst(" AND $", "")) + " ORDER BY " + shardOrder()
                + "id LIMIT 1";
        this.parkedFilter = " WHERE id > ? AND (CAST(? AS text) IS NULL OR topic = ?)"
                + " AND (CAST(? AS text) IS NULL OR key = ?) AND (CAST(? AS text) IS NULL OR strpos(reason, ?) > 0)"
                + " AND (CAST(? AS uuid) IS NULL OR message_id = CAST(? AS uuid))"
                + " AND (CAST(? AS timestamptz) IS NULL OR parked_at >= CAST(? AS timestamptz))"
                + " AND (CAST(? AS timestamptz) IS NULL OR parked_at < CAST(? AS timestamptz))";
        this.parkedMessageSql = "SELECT id, topic, key, attempts, reason, parked_at, create_time, value, header_names,"
                + " header_values, message_id FROM " + p + " WHERE id = ?";
        this.discardSql = "DELETE FROM " + p + " WHERE id = ANY(?)";
        // Storage fencing. The bump is an upsert whose UPDATE takes the leader row's lock; every fenced write reads
        // the row FOR SHARE in a CTE (f) of its own statement and does its work only if the epoch is the writer's.
        // The two serialize on the row: a write that locked it first commits before the bump can; a write that
        // waits for the bump's lock re-reads the row once the bump commits (READ COMMITTED re-checks a row that
        // changed while it waited; REPEATABLE READ fails with a serialization error, retriable) and sees the new
        // epoch. The statement returns the epoch it saw, so that a refused write is told apart from one with no row
        // left to change.
        String l = names.leader();
        // Each shard has its epoch in a row of its own (shard + 1); a sharded outbox's whole store, row 0.
        this.takeEpochSql = "INSERT INTO " + l + " (id, epoch) VALUES (" + leaderRow() + ", 1) ON CONFLICT (id) DO UPDATE"
                + " SET epoch = " + l + ".epoch + 1, acquired_at = now() RETURNING epoch";
        String fence = "WITH f AS (SELECT epoch, epoch = CAST(? AS bigint) AS ok FROM " + l
                + " WHERE id = " + leaderRow() + " FOR SHARE), ";
        String seen = " SELECT (SELECT epoch FROM f)";
        this.fencedMarkSql = fence + "m AS (" + markSql.replace(" RETURNING ", " AND (SELECT ok FROM f) RETURNING ")
                + ") SELECT (SELECT epoch FROM f), m.* FROM (SELECT 1) AS one LEFT JOIN m ON true";
        this.fencedPurgeSql = fence + "d AS (" + purgeSql + " AND (SELECT ok FROM f) RETURNING 1)" + seen;
        this.fencedResetSql = fence + "u AS (" + resetSql + " AND (SELECT ok FROM f) RETURNING 1)" + seen;
        this.fencedRetryLaterSql = fence + "u AS (" + retryLaterSql + " AND (SELECT ok FROM f) RETURNING 1)" + seen;
        this.fencedParkSql = fence + parkSql.substring("WITH ".length())
                .replace(" WHERE o.id = r.id RETURNING ", " WHERE o.id = r.id AND (SELECT ok FROM f) RETURNING ")
                .replace(" INSERT INTO " + p, ", i AS (INSERT INTO " + p) + " RETURNING 1)" + seen;
        // A parked WAL message keeps its log position as its id: parking it again (its confirmation was lost and a
        // new stream delivered it again) changes nothing.
        this.walParkSql = "INSERT INTO " + p + " (id, create_time, topic, key, value, header_names, header_values,"
                + " attempts, reason, parked_at, message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?)"
                + " ON CONFLICT (id) DO NOTHING";
        // The WAL functions' names exist only for a table short enough for them (WalSql.MAX_TABLE_LENGTH).
        this.walReplaySql = wal == null ? null : "WITH moved AS (DELETE FROM " + p + " WHERE id = ANY(?)"
                + " RETURNING id, topic, key, value, header_names, header_values, message_id)"
                + " SELECT count(pg_logical_emit_message(true, ?, " + WalSql.encodeFunction(names)
                + "(topic, key, value, header_names, header_values, message_id))) FROM (SELECT * FROM moved ORDER BY id) m";
        this.retainedSql = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots"
                + " WHERE slot_name = ?";
        String ledgerTable = quoted(names, names.table() + "_wal_ledger");
        // One row per append (a purge batch), so that a purge pays for what it finished, not for everything kept.
        this.ledgerDdl = "CREATE TABLE IF NOT EXISTS " + ledgerTable + " (slot text NOT NULL, max_end bigint NOT NULL,"
                + " positions bigint[] NOT NULL, ends bigint[] NOT NULL, saved_at timestamptz NOT NULL DEFAULT now());"
                + " CREATE INDEX IF NOT EXISTS \"" + names.table() + "_wal_ledger_slot\" ON " + ledgerTable
                + " (slot, max_end)";
        // One statement: the slot's confirmed position (what the server has, not what the stream last sent), the
        // rows it vouches for deleted, the new entries inserted as one row unless the position vouches for them
        // too; it returns the position, below which the harvest forgets its entries.
        this.saveLedgerSql = "WITH s AS (SELECT COALESCE((SELECT CAST(pg_wal_lsn_diff(confirmed_flush_lsn, '0/0') AS"
                + " bigint) FROM pg_replication_slots WHERE slot_name = ?), 0) AS c),"
                + " gone AS (DELETE FROM " + ledgerTable + " WHERE slot = ? AND max_end <= (SELECT c FROM s)),"
                + " added AS (INSERT INTO " + ledgerTable + " (slot, max_end, positions, ends)"
                + " SELECT ?, ?, ?, ? FROM s WHERE ? > s.c)"
                + " SELECT c FROM s";
        this.loadLedgerSql = "SELECT positions, ends FROM " + ledgerTable + " WHERE slot = ?";
        this.shardExpressionSql = "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_attrdef d"
                + " ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = to_regclass(?)"
                + " AND a.attname = 'shard' AND a.attgenerated = 's' AND NOT a.attisdropped";
        List<PostgresStore> shards = new ArrayList<>();
        if (shard < 0 && shardCount() > 1) {
            for (int i = 0; i < shardCount(); i++) {
                shards.add(new PostgresStore(builder, i, this));
            }
        }
        this.views = List.copyOf(shards);
        this.sharedListener = shard < 0 && shardCount() > 1 && notifyChannel != null
                ? new SharedCommitWatch(wakeAll -> new PgCommitListener(jdbi(), notifyChannel, wakeAll)) : null;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view is a store of this class over the same table whose mark, read, backlog and oldest create time add
     * {@code shard = <index>} to their conditions (served by the index on {@code (shard, id)}), and whose epoch is
     * the leader table's row {@code index + 1}.
     */
    @Override
    public Store shard(int index) {
        dev.outbox.OutboxShards.checkIndex(index, shards());
        return views.isEmpty() ? this : views.get(index);
    }

    @Override
    protected Optional<String> shardExpression() {
        return inTransaction("reading the shard column of " + names.outbox(), settingsSql, handle ->
                handle.createQuery(shardExpressionSql).bind(0, names.outbox()).mapTo(String.class).findOne());
    }

    /** Starts a builder for a Postgres store on the connections of {@code jdbi}. */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    /** Starts a builder for a Postgres store on the connections of {@code dataSource}; use a pooling one. */
    public static Builder builder(DataSource dataSource) {
        return builder(jdbi(dataSource));
    }

    /**
     * Both tables are created in one transaction, under an advisory lock that serializes concurrent creators. Tables
     * that predate message ids are upgraded in place ({@link #upgradeSql()}) in the same transaction: each statement
     * only changes the catalog, so writers and dispatchers carry on. The DDL itself gives a table of an earlier version
     * the id default that takes the transaction id first (its {@code DO} block), once: only while the column still
     * has another default.
     */
    @Override
    protected void createTables(String ddl) {
        inTransaction("creating the outbox schema for " + names.outbox(), settingsSql, handle -> {
            handle.createQuery("SELECT pg_advisory_xact_lock(?)").bind(0, SCHEMA_LOCK_KEY).mapTo(String.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(ddl);
            }
            boolean upgrade = handle.createQuery("SELECT count(*) FROM pg_attribute WHERE attname = 'message_id'"
                            + " AND NOT attisdropped AND attrelid IN (to_regclass(?), to_regclass(?))")
                    .bind(0, names.outbox()).bind(1, names.parked()).mapTo(Integer.class).one() < 2;
            if (upgrade) {
                log.info("Adding the message_id column to {} and {}", names.outbox(), names.parked());
                try (Statement statement = handle.getConnection().createStatement()) {
                    statement.execute(upgradeSql());
                }
            }
            boolean noNextAttempt = handle.createQuery("SELECT count(*) FROM pg_attribute WHERE attname ="
                            + " 'next_attempt_at' AND NOT attisdropped AND attrelid = to_regclass(?)")
                    .bind(0, names.outbox()).mapTo(Integer.class).one() == 0;
            if (noNextAttempt) {
                log.info("Adding the next_attempt_at column to {}", names.outbox());
                try (Statement statement = handle.getConnection().createStatement()) {
                    statement.execute(render(UPGRADE_NEXT_ATTEMPT_RESOURCE));
                }
            }
            if (wal != null) {
                try (Statement statement = handle.getConnection().createStatement()) {
                    statement.execute(walSchemaSql());
                    statement.execute(ledgerDdl);
                }
            }
            return null;
        });
        if (wal != null) {
            createSlot(); // not in the transaction above: a slot cannot be created by a transaction that wrote
        }
    }

    /** Fills in the message-id function, {@code ${uuidv7}}. */
    @Override
    protected String fillIn(String sql) {
        String filled = sql.replace("${uuidv7}", uuidv7);
        if (shardCount() == 1) {
            return filled.replace("${shardColumn}", "").replace("${leaderIds}", "id = 1");
        }
        return filled.replace("${shardColumn}", "    ,shard integer GENERATED ALWAYS AS (" + shardSql("key", shardCount())
                        + ") STORED -- OutboxShards.shardOf(key, " + shardCount() + "): the row's shard\n")
                .replace("${leaderIds}", "id >= 0")
                + "\n\n-- Sharded harvest: each shard's leader walks its rows in id order through this index (mark, read,"
                + "\n-- backlog, oldest create time all filter on shard = <i>). A table created without the column is"
                + "\n-- left as it is: the store refuses it, naming both shard counts.\nDO $$\nBEGIN\n    IF EXISTS"
                + " (SELECT FROM pg_attribute WHERE attrelid = CAST('" + names.outbox() + "' AS regclass)"
                + " AND attname = 'shard' AND NOT attisdropped) THEN\n        CREATE INDEX IF NOT EXISTS \""
                + names.table() + "_shard\" ON " + names.outbox() + " (shard, id);\n    END IF;\nEND\n$$;\n";
    }

    /**
     * {@inheritDoc}
     *
     * <p>Postgres: drops the {@code shard} column if it exists (its index goes with it), adds it back for this
     * count with its index, and replaces the leader table's check constraint ({@code id >= 0} sharded, {@code id = 1}
     * unsharded, after deleting the other shards' epoch rows). {@link #reshard()} runs it in one transaction, which
     * holds the outbox table's exclusive lock until it commits: writers wait meanwhile.
     */
    @Override
    public String reshardSql(int fromShards) {
        dev.outbox.OutboxShards.checkCount(fromShards);
        String t = names.outbox();
        String l = names.leader();
        StringBuilder sql = new StringBuilder("ALTER TABLE " + t + " DROP COLUMN IF EXISTS shard;\n");
        if (shardCount() > 1) {
            sql.append("ALTER TABLE ").append(t).append(" ADD COLUMN shard integer GENERATED ALWAYS AS (")
                    .append(shardSql("key", shardCount())).append(") STORED;\n")
                    .append("CREATE INDEX IF NOT EXISTS \"").append(names.table()).append("_shard\" ON ").append(t)
                    .append(" (shard, id);\n");
        } else {
            sql.append("DELETE FROM ").append(l).append(" WHERE id <> 1;\n");
        }
        return sql.append("DO $$\nDECLARE\n    c name;\nBEGIN\n    FOR c IN SELECT conname FROM pg_constraint")
                .append(" WHERE conrelid = CAST('").append(l).append("' AS regclass) AND contype = 'c' LOOP\n")
                .append("        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', '").append(l)
                .append("', c);\n    END LOOP;\nEND\n$$;\n")
                .append("ALTER TABLE ").append(l).append(" ADD CHECK (").append(shardCount() > 1 ? "id >= 0" : "id = 1")
                .append(");\n").toString();
    }

    /**
     * The Postgres expression of {@link dev.outbox.OutboxShards#shardOf}{@code (key, count)} for a text column or
     * value {@code key}: its md5's first 8 hex digits read as an unsigned 32-bit integer, modulo {@code count}.
     * {@code md5(text)} hashes the text's bytes in the database's encoding, which must be UTF-8 for the two to agree.
     */
    static String shardSql(String key, int count) {
        return "CAST(CAST(CAST('x' || substr(md5(" + key + "), 1, 8) AS bit(32)) AS bigint) % " + count
                + " AS integer)";
    }

    /**
     * The in-place upgrade of tables created before message ids (the {@code upgrade-message-id.sql} resource of this
     * package), with the configured names filled in; run it after {@link #schemaSql()}'s function exists. It only
     * changes the catalog, so it neither rewrites nor blocks rows for longer than an instant; {@link #createSchema()}
     * runs it when the {@code message_id} column is missing.
     */
    public String upgradeSql() {
        return render(UPGRADE_RESOURCE);
    }

    /**
     * {@code "shard, "} for a shard's view: the walks in id order (mark, read, oldest) order by {@code (shard, id)},
     * the same order as by id within one shard, with the shard as a range ({@link #shardWalk}), so that only the
     * {@code (shard, id)} index yields that order without a sort. With {@code shard = <i>} the planner drops the
     * shard from the order (it is constant) and may walk the primary key with a filter instead (its estimate
     * assumes the shard's rows are spread evenly; the heap order favours the primary key): that walks every row of
     * the other shards in front of this shard's first row, the whole backlog of a lagging shard for a shard that has
     * caught up (PostgresShardsTest).
     */
    private String shardOrder() {
        return shardIndex() < 0 ? "" : "shard, ";
    }

    /** {@code "shard >= <i> AND shard <= <i> AND "} for a shard's view (see {@link #shardOrder}); else empty. */
    private String shardWalk() {
        return shardIndex() < 0 ? "" : "shard >= " + shardIndex() + " AND shard <= " + shardIndex() + " AND ";
    }

    /** {@code " (shard <i>)"} for a shard's view, for messages; empty for the whole outbox. */
    private String shardName() {
        return shardIndex() < 0 ? "" : " (shard " + shardIndex() + ")";
    }

    @Override
    public PostgresPublisher publisher() {
        return publisher;
    }

    /**
     * Whether storage fencing is on ({@link Builder#fencing}) for the table harvest. The WAL harvest is not fenced by
     * the database: its replication slot already admits one reader at a time, and a deposed leader's stream is
     * terminated by its successor's take-over.
     */
    @Override
    protected boolean fencing() {
        return super.fencing() && wal == null;
    }

    @Override
    protected long takeEpoch() {
        return inTransaction("taking the leader epoch" + shardName() + " in " + names.leader() + " (storage fencing: the table is created"
                + " by createSchema() and the shipped migrations; Builder.fencing(false) turns fencing off)",
                settingsSql, handle -> handle.createQuery(takeEpochSql).mapTo(Long.class).one());
    }

    @Override
    protected MarkResult mark(UUID leaderId, int limit, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        limit(limit);
        if (wal != null) {
            throw new UnsupportedOperationException("the WAL harvest of " + names.outbox() + " has no mark: harvest it"
                    + " with DispatcherConfig.Harvest.CURSOR (the default)");
        }
        requireShards();
        String operation = "marking up to " + limit + " rows of " + names.outbox() + shardName() + " for leader "
                + leaderId;
        boolean fenced = fence != UNFENCED;
        int p = fenced ? 1 : 0;
        return inTransaction(operation, markSettingsSql, handle -> {
            List<MarkedRow> rows = new ArrayList<>();
            Long[] seen = {null};
            var query = handle.createQuery(fenced ? fencedMarkSql : markSql);
            if (fenced) {
                query.bind(0, fence);
            }
            query.bind(p, uuid(leaderId))
                    .bind(p + 1, uuid(leaderId))
                    .bind(p + 2, limit)
                    .scanResultSet((supplier, context) -> {
                        var rs = supplier.get();
                        while (rs.next()) {
                            if (fenced) {
                                seen[0] = (Long) rs.getObject(1);
                                if (rs.getObject(2) == null) {
                                    continue; // the row of the epoch when nothing was marked
                                }
                            }
                            rows.add(RowReader.read(rs, p, maxKeyLength()));
                        }
                        return null;
                    });
            if (fenced) {
                checkFence(operation, fence, seen[0]);
            }
            return marked(rows);
        });
    }

    /**
     * Runs a fenced write ({@code fence} bound first, then {@code binder}'s parameters) and refuses it if the epoch
     * it saw is not {@code fence}.
     */
    private void fencedWrite(String operation, String sql, long fence,
                             java.util.function.Consumer<org.jdbi.v3.core.statement.Query> binder) {
        inTransaction(operation, settingsSql, handle -> {
            var query = handle.createQuery(sql).bind(0, fence);
            binder.accept(query);
            checkFence(operation, fence, query.mapTo(Long.class).findOne().orElse(null));
            return null;
        });
    }

    @Override
    protected boolean hasRead() {
        return true;
    }

    /** False with the WAL harvest: the messages are not rows that could be marked. */
    @Override
    protected boolean hasMark() {
        return wal == null;
    }

    /** True with the WAL harvest: a read waits (up to {@link WalHarvest#readWait()}) for a message to arrive. */
    @Override
    public boolean readWaits() {
        return wal != null;
    }

    /** With the WAL harvest, cuts short a read waiting for a message to arrive. */
    @Override
    public void wakeRead() {
        if (streamed != null) {
            streamed.wakeRead();
        }
    }

    /**
     * With commit notifications on (the default, see {@link Builder#commitNotifications}) and the table harvested:
     * listens on this outbox's channel with one connection of the store's pool, held until the subscription is
     * closed, and also takes this process's publishers' {@link dev.outbox.Publisher#committed()} calls, which arrive
     * before the notification does (Postgres delivers a notification about a millisecond after the commit returns):
     * a writer in the leader's process wakes it at once, any other writer through the notification. The shards of a
     * sharded outbox ({@link #shard}) share one such connection per store: a commit to any shard wakes every shard's
     * harvest. With notifications off, this process's publishers only. Null with the WAL harvest, whose read waits
     * for messages instead.
     */
    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        if (whole != null) {
            // One listening connection for every shard this process harvests; a commit to any shard wakes them all.
            return whole.sharedListener != null
                    ? new LocalAndListening(whole.localCommitWatch(wakeUp), whole.sharedListener.watch(wakeUp))
                    : whole.watchCommits(wakeUp);
        }
        if (wal != null) {
            return null;
        }
        return notifyChannel == null ? localCommitWatch(wakeUp)
                : new LocalAndListening(localCommitWatch(wakeUp), new PgCommitListener(jdbi(), notifyChannel, wakeUp));
    }

    /**
     * A listening watch with this process's publishers' wake-ups beside it: the listener says whether it is
     * listening and is told when wake-ups are needed; the local watch costs nothing while unneeded, and stays.
     */
    static final class LocalAndListening implements CommitWatch {
        private final CommitWatch local;
        /** The listening half ({@link PgCommitListener}, or a shard's share of one). */
        final CommitWatch listener;

        LocalAndListening(CommitWatch local, CommitWatch listener) {
            this.local = local;
            this.listener = listener;
        }

        @Override
        public boolean listening() {
            return listener.listening();
        }

        @Override
        public void needed(boolean needed) {
            listener.needed(needed);
        }

        @Override
        public void close() {
            local.close();
            listener.close();
        }
    }

    /** With the WAL harvest: closes the replication stream, which releases the slot for the next leader. */
    @Override
    public void harvestStopped() {
        if (streamed != null) {
            streamed.stop();
        }
    }

    /**
     * With the WAL harvest: the write-ahead log the slot holds back ({@code pg_current_wal_lsn() - restart_lsn}),
     * empty if the slot does not exist; empty with the table harvest.
     */
    @Override
    public OptionalLong retainedBytes() {
        if (wal == null) {
            return OptionalLong.empty();
        }
        return inTransaction("reading the WAL retained by slot " + slot, settingsSql, handle ->
                handle.createQuery(retainedSql).bind(0, slot).mapTo(Long.class).findOne()
                        .map(OptionalLong::of).orElse(OptionalLong.empty()));
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        if (after < 0) {
            throw new IllegalArgumentException("after must not be negative: " + after);
        }
        Objects.requireNonNull(recheck, "recheck must not be null");
        limit(limit);
        if (streamed != null) {
            return streamed.read(after, recheck, limit);
        }
        requireShards();
        List<IdRange> ranges = ranges(recheck, after);
        Long[] from = ranges.stream().map(IdRange::from).toArray(Long[]::new);
        Long[] to = ranges.stream().map(IdRange::to).toArray(Long[]::new);
        return inTransaction("reading up to " + limit + " rows of " + names.outbox() + shardName() + " after id " + after,
                readSettingsSql, handle -> {
                    TreeMap<Long, MarkedRow> rows = new TreeMap<>();
                    List<Long> withoutMessageId = new ArrayList<>();
                    long[] snapshot = new long[3];
                    bindRead(handle.createQuery(readSql), after, from, to, limit)
                            .scanResultSet((supplier, context) -> {
                                var rs = supplier.get();
                                while (rs.next()) {
                                    snapshot[0] = rs.getLong(1);
                                    snapshot[1] = rs.getLong(2);
                                    snapshot[2] = rs.getInt(3);
                                    if (rs.getObject(4) == null) {
                                        continue; // the snapshot's row when nothing was read
                                    }
                                    MarkedRow row = RowReader.read(rs, 3, maxKeyLength());
                                    rows.put(row.id(), row);
                                    if (rs.getObject(13) == null) {
                                        withoutMessageId.add(row.id());
                                    }
                                }
                                return null;
                            });
                    if (!withoutMessageId.isEmpty()) {
                        // Rare: rows written before the message_id column. Store their ids, then return them as
                        // stored (a row deleted meanwhile is not returned).
                        withoutMessageId.forEach(rows::remove);
                        handle.createQuery(fillMessageIdsSql).bind(0, bigints(withoutMessageId.toArray(new Long[0])))
                                .scanResultSet((supplier, context) -> {
                                    var rs = supplier.get();
                                    while (rs.next()) {
                                        MarkedRow row = RowReader.read(rs, maxKeyLength());
                                        rows.put(row.id(), row);
                                    }
                                    return null;
                                });
                    }
                    return new ReadResult(marked(rows.values()), gapToken(snapshot[1], (int) snapshot[2]),
                            snapshot[0]);
                });
    }

    /**
     * The gap token of a read: the first transaction id not yet assigned when the read's snapshot had been taken,
     * as a 64-bit {@code xid8}, from the snapshot's {@code xmax} and {@code age3 = age('3'::xid)}.
     *
     * <p>Not the snapshot's {@code xmax}: that is one past the latest <em>completed</em> transaction id, and a
     * transaction that took its id (and then an outbox id below a row the read returned) after the last one that
     * completed has an id at or above {@code xmax}. It is not in the snapshot's list of running transactions either,
     * so a later snapshot's {@code xmin} can pass it while it is still running (tested by
     * {@code PostgresStoreReadTest}). {@code age(xid)} counts from the transaction's own id or, in a transaction that
     * has none (as this read has when it calls it), from the next id to be assigned, read at its first call in the
     * transaction: during the read statement, after its snapshot. Every transaction that took an outbox id below the
     * read's highest row took its transaction id earlier (the id column's default takes the transaction id first),
     * so its id is below the token. {@code age} is 32 bits; the token is {@code xmax} moved forward by the (small,
     * non-negative) distance from {@code xmax} to that next id, modulo 2<sup>32</sup>.
     */
    static long gapToken(long xmax, int age3) {
        long next32 = (age3 + 3L) & 0xFFFF_FFFFL;
        return xmax + ((next32 - (xmax & 0xFFFF_FFFFL)) & 0xFFFF_FFFFL);
    }

    /** The ranges below or at {@code after}, sorted and merged (so that no row is read twice), clipped to it. */
    private static List<IdRange> ranges(List<IdRange> recheck, long after) {
        List<IdRange> sorted = new ArrayList<>(recheck.size());
        for (int i = 0; i < recheck.size(); i++) {
            IdRange range = recheck.get(i);
            if (range == null) {
                throw new IllegalArgumentException("recheck contains null at position " + i);
            }
            if (range.from() <= after) {
                sorted.add(range);
            }
        }
        sorted.sort(java.util.Comparator.comparingLong(IdRange::from));
        List<IdRange> merged = new ArrayList<>(sorted.size());
        for (IdRange range : sorted) {
            IdRange last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            if (last != null && range.from() <= last.to() + 1) {
                merged.set(merged.size() - 1, new IdRange(last.from(), Math.max(last.to(), range.to())));
            } else {
                merged.add(range);
            }
        }
        return merged;
    }

    private <S extends org.jdbi.v3.core.statement.SqlStatement<S>> S bindRead(S statement, long after, Long[] from,
                                                                             Long[] to, int limit) {
        return statement.bind(0, after).bind(1, limit).bind(2, bigints(from)).bind(3, bigints(to)).bind(4, after)
                .bind(5, limit);
    }

    /** The read statement, for tests that compare plans. */
    String readSql() {
        return readSql;
    }

    /** The plan Postgres chooses for {@link #read} right now, under the same settings; for tests and diagnosis. */
    String explainRead(long after, List<IdRange> recheck, int limit) {
        List<IdRange> ranges = ranges(recheck, after);
        Long[] from = ranges.stream().map(IdRange::from).toArray(Long[]::new);
        Long[] to = ranges.stream().map(IdRange::to).toArray(Long[]::new);
        return inTransaction("explaining the read of " + names.outbox(), readSettingsSql, handle ->
                String.join("\n", bindRead(handle.createQuery("EXPLAIN " + readSql), after, from, to, limit)
                        .mapTo(String.class).list()));
    }

    /** The mark statement, for tests that compare plans. */
    String markSql() {
        return markSql;
    }

    /**
     * The plan Postgres chooses for {@link #mark} right now, under the same settings; for tests and diagnosis.
     */
    String explainMark(UUID leaderId, int limit) {
        return inTransaction("explaining the mark of " + names.outbox(), markSettingsSql, handle ->
                String.join("\n", handle.createQuery("EXPLAIN " + markSql)
                        .bind(0, uuid(leaderId)).bind(1, uuid(leaderId)).bind(2, limit)
                        .mapTo(String.class).list()));
    }

    @Override
    protected void purge(Collection<Long> ids, long fence) {
        if (streamed != null) {
            streamed.finished(ids("ids", ids));
            return;
        }
        Long[] array = ids("ids", ids).toArray(new Long[0]);
        if (array.length == 0) {
            return;
        }
        String operation = "purging " + array.length + " rows of " + names.outbox();
        if (fence != UNFENCED) {
            fencedWrite(operation, fencedPurgeSql, fence, q -> q.bind(1, bigints(array)));
            return;
        }
        inTransaction(operation, settingsSql, handle -> handle.createUpdate(purgeSql).bind(0, bigints(array)).execute());
    }

    @Override
    protected void reset(UUID leaderId, Collection<Long> ids, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        if (streamed != null) {
            Map<Long, Instant> now = new TreeMap<>();
            ids("ids", ids).forEach(id -> now.put(id, Instant.now()));
            streamed.retryLater(now);
            return;
        }
        Long[] array = ids("ids", ids).toArray(new Long[0]);
        if (array.length == 0) {
            return;
        }
        String operation = "resetting " + array.length + " rows of " + names.outbox();
        if (fence != UNFENCED) {
            fencedWrite(operation, fencedResetSql, fence, q -> q.bind(1, uuid(leaderId)).bind(2, bigints(array)));
            return;
        }
        inTransaction(operation, settingsSql, handle ->
                handle.createUpdate(resetSql).bind(0, uuid(leaderId)).bind(1, bigints(array)).execute());
    }

    @Override
    protected void retryLater(Map<Long, Instant> nextAttempts, long fence) {
        TreeMap<Long, Instant> sorted = nextAttempts(nextAttempts);
        if (streamed != null) {
            streamed.retryLater(sorted); // in memory: a new stream delivers the message with zero attempts
            return;
        }
        if (sorted.isEmpty()) {
            return;
        }
        Long[] ids = sorted.keySet().toArray(new Long[0]);
        String[] times = sorted.values().stream().map(Instant::toString).toArray(String[]::new);
        String operation = "recording failed deliveries of " + ids.length + " rows of " + names.outbox();
        if (fence != UNFENCED) {
            fencedWrite(operation, fencedRetryLaterSql, fence, q -> q.bind(1, bigints(ids)).bind(2, texts(times)));
            return;
        }
        inTransaction(operation, settingsSql,
                handle -> handle.createUpdate(retryLaterSql).bind(0, bigints(ids)).bind(1, texts(times)).execute());
    }

    @Override
    protected void park(Map<Long, String> reasons, long fence) {
        // Postgres text cannot hold U+0000.
        Map<Long, String> sorted = reasons(reasons, reason -> reason.replace("\u0000", "\\u0000"));
        if (sorted.isEmpty()) {
            return;
        }
        if (streamed != null) {
            parkStreamed(sorted);
            return;
        }
        Long[] ids = sorted.keySet().toArray(new Long[0]);
        String[] texts = sorted.values().toArray(new String[0]);
        String operation = "parking " + ids.length + " rows of " + names.outbox();
        if (fence != UNFENCED) {
            fencedWrite(operation, fencedParkSql, fence, q -> q.bind(1, bigints(ids)).bind(2, texts(texts)));
            return;
        }
        inTransaction(operation, settingsSql, handle ->
                handle.createUpdate(parkSql).bind(0, bigints(ids)).bind(1, texts(texts)).execute());
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        limit(limit);
        return inTransaction("listing parked rows of " + names.parked(), settingsSql, handle ->
                handle.createQuery(parkedSql).bind(0, limit).map((rs, ctx) -> parkedRecord(rs)).list());
    }

    @Override
    public int replay(Collection<Long> ids) {
        Long[] array = ids("ids", ids).toArray(new Long[0]);
        if (array.length == 0) {
            return 0;
        }
        int replayed = wal != null
                ? inTransaction("replaying " + array.length + " parked messages into the WAL of " + names.outbox(),
                        settingsSql, handle -> handle.createQuery(walReplaySql).bind(0, bigints(array))
                                .bind(1, walPrefix).mapTo(Integer.class).one())
                : inTransaction("replaying " + array.length + " parked rows into " + names.outbox(),
                        settingsSql, handle -> {
                            handle.execute(replayLockSql);
                            return handle.createQuery(replaySql).bind(0, bigints(array)).mapTo(Integer.class).one();
                        });
        log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        return replayed;
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return inTransaction("listing parked rows of " + names.parked(), settingsSql, handle ->
                bindFilter(handle.createQuery("SELECT id, topic, key, attempts, reason, parked_at, message_id FROM "
                        + names.parked() + parkedFilter + " ORDER BY id LIMIT ?"), query).bind(13, query.limit())
                        .map((rs, ctx) -> parkedRecord(rs)).list());
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return inTransaction("counting parked rows of " + names.parked(), settingsSql, handle ->
                bindFilter(handle.createQuery("SELECT count(*) FROM " + names.parked() + parkedFilter),
                        query.after(0)).mapTo(Long.class).one());
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        return inTransaction("reading parked row " + id + " of " + names.parked(), settingsSql, handle ->
                handle.createQuery(parkedMessageSql).bind(0, id).map((rs, ctx) -> {
                    OffsetDateTime created = rs.getObject(7, OffsetDateTime.class);
                    List<Header> headers = List.of();
                    String problem = null;
                    try {
                        headers = RowReader.headers(rs.getArray(9), rs.getArray(10));
                    } catch (IllegalArgumentException e) {
                        problem = e.getMessage();
                    }
                    return new ParkedMessage(parkedRecord(rs), created == null ? null : created.toInstant(),
                            rs.getBytes(8), headers, problem);
                }).findOne());
    }

    @Override
    public int discard(Collection<Long> ids) {
        Long[] array = ids("ids", ids).toArray(new Long[0]);
        if (array.length == 0) {
            return 0;
        }
        return inTransaction("discarding " + array.length + " parked rows of " + names.parked(), settingsSql,
                handle -> handle.createUpdate(discardSql).bind(0, bigints(array)).execute());
    }

    private static <S extends org.jdbi.v3.core.statement.SqlStatement<S>> S bindFilter(S statement, ParkedQuery q) {
        // Bound as text and cast by the server: a null needs no JDBC type, an instant keeps its zone (ISO-8601, UTC).
        String messageId = q.messageId() == null ? null : q.messageId().toString();
        String from = q.parkedFrom() == null ? null : q.parkedFrom().toString();
        String before = q.parkedBefore() == null ? null : q.parkedBefore().toString();
        return statement.bind(0, q.afterId()).bind(1, q.topic()).bind(2, q.topic()).bind(3, q.key())
                .bind(4, q.key()).bind(5, q.reasonContains()).bind(6, q.reasonContains()).bind(7, messageId)
                .bind(8, messageId).bind(9, from).bind(10, from).bind(11, before).bind(12, before);
    }

    /** A parked row's summary from columns 1 to 6 (id to parked_at) and the column message_id. */
    private static ParkedRecord parkedRecord(java.sql.ResultSet rs) throws java.sql.SQLException {
        OffsetDateTime parkedAt = rs.getObject(6, OffsetDateTime.class);
        return new ParkedRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getString(5),
                parkedAt == null ? null : parkedAt.toInstant(), rs.getObject("message_id", UUID.class));
    }

    /**
     * The rows in the outbox table, marked or not. Exact up to {@value #EXACT_BACKLOG_LIMIT} rows (it counts the
     * head of the table); above that, the planner's estimate from the table's statistics and current size,
     * never less than {@value #EXACT_BACKLOG_LIMIT} + 1.
     */
    @Override
    public long backlog() {
        if (streamed != null) {
            return streamed.pendingCount(); // WAL harvest: what this leader received and has not finished
        }
        return inTransaction("counting the backlog of " + names.outbox(), settingsSql, handle ->
                handle.createQuery(backlogSql).bind(0, names.outbox()).map((rs, ctx) -> {
                    long counted = rs.getLong(1);
                    if (counted <= EXACT_BACKLOG_LIMIT) {
                        return counted;
                    }
                    return Math.max(counted, (long) rs.getDouble(2));
                }).one());
    }

    /** The rows in the parked table, counted exactly (the parked table is meant to stay small). */
    /**
     * True for the table harvest: {@link #parkedKeys()}, and {@link #replay} moves a replayed key's later rows behind
     * the replayed ones. False for the WAL harvest, whose messages are not rows that a replay could move.
     */
    @Override
    protected boolean hasParkedKeys() {
        return wal == null;
    }

    /** {@code SELECT DISTINCT key} over the parked table. */
    @Override
    public Set<String> parkedKeys() {
        if (wal != null) {
            throw new UnsupportedOperationException("the WAL harvest does not hold keys (supportsHoldKey is false):"
                    + " use afterPark MOVE_ON");
        }
        return inTransaction("listing the keys of " + names.parked(), settingsSql, handle ->
                new HashSet<>(handle.createQuery(parkedKeysSql).mapTo(String.class).list()));
    }

    @Override
    public long parkedCount() {
        return inTransaction("counting the rows of " + names.parked(), settingsSql, handle ->
                handle.createQuery(parkedCountSql).mapTo(Long.class).one());
    }

    /** The {@code create_time} of the row with the lowest id, found through the primary key's index. */
    @Override
    public Optional<Instant> oldestCreateTime() {
        if (streamed != null) {
            return streamed.oldestCommitTime(); // WAL harvest: the commit time of the oldest message pending here
        }
        return inTransaction("reading the head of " + names.outbox(), settingsSql, handle ->
                handle.createQuery(oldestSql).map((rs, ctx) -> rs.getObject(1, OffsetDateTime.class).toInstant())
                        .findOne());
    }

    // ------------------------------------------------------------------------------------------ WAL harvest

    /** Whether this store harvests the write-ahead log ({@link Builder#walHarvest}) rather than its table. */
    public boolean harvestsWal() {
        return wal != null;
    }

    /** The replication slot of the WAL harvest, or null when the table is harvested. */
    public String slot() {
        return slot;
    }

    /** The prefix of this outbox's logical messages in the WAL, or null when the table is harvested. */
    public String walPrefix() {
        return walPrefix;
    }

    /** Opens the replication stream of the WAL harvest: called by the first read of a leadership. */
    private CommitStream openStream() {
        return PgOutputStream.open(WalStreamSettings.of(
                        PgOutputStream.replicationConnections(wal.url(), wal.properties()), walConnections, slot,
                        publication, walPrefix)
                .withStatusInterval(wal.statusInterval())
                .withTakeOverTimeout(wal.takeoverTimeout())
                .withBufferedMessages(wal.maxBuffered()));
    }

    /**
     * The default slot name: slots are named per server, not per database, so the name holds the database (from the
     * URL), the schema if configured, and the table: {@code <database>_[<schema>_]<table>_slot}, in {@code [a-z0-9_]},
     * shortened with a hash when longer than 63 characters.
     */
    static String defaultSlot(String url, SqlTableNames names) {
        String database = url.replaceFirst("^jdbc:postgresql:(//[^/]*/?)?", "").replaceFirst("[?;].*$", "");
        String base = (database.isEmpty() ? "" : database + "_") + (names.schema() == null ? "" : names.schema() + "_")
                + names.table();
        base = base.toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        String name = base + "_slot";
        if (name.length() > 63) {
            name = base.substring(0, 45) + "_" + String.format("%08x", base.hashCode()) + "_slot";
        }
        return name;
    }

    private static DataSource plainConnections(WalHarvest wal) {
        org.postgresql.ds.PGSimpleDataSource ds = new org.postgresql.ds.PGSimpleDataSource();
        ds.setURL(wal.url());
        wal.properties().forEach((k, v) -> {
            try {
                ds.setProperty(String.valueOf(k), String.valueOf(v));
            } catch (java.sql.SQLException e) {
                throw new IllegalArgumentException("the WAL harvest's connection property " + k + " is not one the"
                        + " Postgres driver knows", e);
            }
        });
        return ds;
    }

    /** A table name in the outbox's schema, quoted. */
    private static String quoted(SqlTableNames names, String table) {
        return (names.schema() == null ? "" : '"' + names.schema() + "\".") + '"' + table + '"';
    }

    /**
     * Adds the WAL messages just finished to the ledger table as one row, and deletes the rows the slot's confirmed
     * position vouches for (see {@link StreamHarvest.Ledger}): one statement per purge batch, whose cost is that of
     * the batch, not of everything the ledger keeps.
     */
    private long appendLedger(Map<Long, Long> finished) {
        Long[] positions = new Long[finished.size()];
        Long[] ends = new Long[finished.size()];
        long maxEnd = 0;
        int i = 0;
        for (Map.Entry<Long, Long> e : finished.entrySet()) {
            positions[i] = e.getKey();
            ends[i++] = e.getValue();
            maxEnd = Math.max(maxEnd, e.getValue());
        }
        long last = maxEnd;
        return inTransaction("saving the WAL ledger of slot " + slot, settingsSql, handle ->
                handle.createQuery(saveLedgerSql).bind(0, slot).bind(1, slot).bind(2, slot).bind(3, last)
                        .bind(4, bigints(positions)).bind(5, bigints(ends)).bind(6, last).mapTo(Long.class).one());
    }

    private Map<Long, Long> loadLedger() {
        Map<Long, Long> kept = new HashMap<>();
        inTransaction("loading the WAL ledger of slot " + slot, settingsSql, handle ->
                handle.createQuery(loadLedgerSql).bind(0, slot).map((rs, ctx) -> {
                    Long[] positions = (Long[]) rs.getArray(1).getArray();
                    Long[] ends = (Long[]) rs.getArray(2).getArray();
                    for (int n = 0; n < positions.length && n < ends.length; n++) {
                        kept.put(positions[n], ends[n]);
                    }
                    return positions.length;
                }).list());
        return kept;
    }

    /** Decodes a streamed message: a record, or a rejected row naming what is wrong with it. */
    private MarkedRow decode(long id, CommitStream.StreamMessage message) {
        WalCodec.Decoded d = WalCodec.decode(message.payload(), maxKeyLength());
        if (d.error() != null) {
            return new MarkResult.Rejected(id, "", "", 0, "undecodable WAL message at LSN "
                    + lsn(message.position()) + ": " + d.error());
        }
        return new MarkedRow.Readable(new OutboxRecord(id, message.commitTime(), d.message(), 0, null,
                d.messageId()));
    }

    private static String lsn(long position) {
        return Long.toHexString(position >>> 32).toUpperCase(java.util.Locale.ROOT) + "/"
                + Long.toHexString(position & 0xFFFFFFFFL).toUpperCase(java.util.Locale.ROOT);
    }

    /**
     * Writes pending WAL messages to the parked table, each under its log position as id, then lets the stream
     * go past them. A message that cannot be decoded is parked with its raw content as the value, an empty topic
     * and key, and the decoding error as its reason.
     */
    private void parkStreamed(Map<Long, String> reasons) {
        Map<Long, StreamHarvest.Pending> pending = streamed.pending(reasons.keySet());
        if (pending.isEmpty()) {
            return;
        }
        inTransaction("parking " + pending.size() + " WAL messages of " + names.outbox(), settingsSql, handle -> {
            var batch = handle.prepareBatch(walParkSql);
            for (StreamHarvest.Pending p : pending.values()) {
                CommitStream.StreamMessage m = p.message();
                OffsetDateTime created = m.commitTime().atOffset(java.time.ZoneOffset.UTC);
                batch.bind(0, m.position()).bind(1, created);
                if (p.row() instanceof MarkedRow.Readable readable) {
                    OutboxRecord r = readable.record();
                    List<dev.outbox.Header> headers = r.message().headers();
                    String[] names = headers.stream().map(dev.outbox.Header::name).toArray(String[]::new);
                    byte[][] values = headers.stream().map(dev.outbox.Header::value).toArray(byte[][]::new);
                    batch.bind(2, r.message().topic()).bind(3, r.message().key()).bind(4, r.message().value())
                            .bind(5, texts(names)).bind(6, byteas(values)).bind(7, r.attempts())
                            .bind(9, uuid(r.messageId()));
                } else {
                    batch.bind(2, "").bind(3, "").bind(4, m.payload()).bind(5, texts(new String[0]))
                            .bind(6, byteas(new byte[0][])).bind(7, 0).bind(9, uuid(null));
                }
                batch.bind(8, reasons.get(p.id())).add();
            }
            batch.execute();
            return null;
        });
        streamed.finished(pending.keySet());
    }

    private static Argument byteas(byte[][] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("bytea", values));
    }

    /**
     * Creates the WAL harvest's replication slot (plugin {@code pgoutput}) and publication if they do not exist.
     * {@link #createSchema()} calls it with the WAL harvest; call it yourself if you run {@link #schemaSql()} and
     * {@link #walSchemaSql()} with your own migrations. A slot retains WAL from its creation on, whether a
     * dispatcher reads it or not: create it when the dispatcher is about to run, and drop it
     * ({@link #dropSlot()}) when the outbox is retired.
     *
     * @throws IllegalStateException with the table harvest
     */
    public void createSlot() {
        requireWal("createSlot");
        PgOutputStream.createSlotAndPublication(walConnections, slot, publication);
    }

    /**
     * Drops the WAL harvest's replication slot and publication, if they exist; every message not yet published is
     * lost with the slot. Fails if a dispatcher is streaming the slot at the time.
     */
    public void dropSlot() {
        requireWal("dropSlot");
        PgOutputStream.dropSlotAndPublication(walConnections, slot, publication);
    }

    /**
     * The DDL of the WAL harvest's functions ({@code <table>_emit} and {@code <table>_wal_encode}, see the
     * {@code wal.sql} resource): what plain-SQL writers call to publish. Idempotent.
     */
    public String walSchemaSql() {
        return WalSql.render(names, WalSql.prefix(names));
    }

    /**
     * The channel this outbox's commits are notified on ({@code LISTEN}/{@code pg_notify}): the table's name,
     * schema-qualified if a schema is set; empty when commit notifications are off or the WAL is harvested.
     */
    public Optional<String> notifyChannel() {
        return Optional.ofNullable(notifyChannel);
    }

    /**
     * The DDL of an optional statement-level trigger that notifies this outbox's channel after every
     * {@code INSERT} into its table, whoever writes it: for plain-SQL writers in any language, so that their rows
     * wake the leader too (this store's own publisher notifies without it; with both, Postgres folds the two
     * notifications of a transaction into one). Idempotent (Postgres 14 or later). Not applied by
     * {@link #createSchema()}.
     *
     * @throws IllegalStateException if commit notifications are off or the WAL is harvested
     */
    public String notifyTriggerSql() {
        if (notifyChannel == null) {
            throw new IllegalStateException("notifyTriggerSql needs commit notifications on a table harvest"
                    + " (PostgresStore.Builder.commitNotifications), and " + names.outbox() + " has none");
        }
        String function = (names.schema() == null ? "" : '"' + names.schema() + "\".") + '"' + names.table()
                + "_notify\"";
        return "CREATE OR REPLACE FUNCTION " + function + "() RETURNS trigger LANGUAGE plpgsql AS $$"
                + " BEGIN PERFORM pg_notify('" + notifyChannel + "', ''); RETURN NULL; END $$;"
                + " CREATE OR REPLACE TRIGGER \"" + names.table() + "_notify\" AFTER INSERT ON " + names.outbox()
                + " FOR EACH STATEMENT EXECUTE FUNCTION " + function + "()";
    }

    /**
     * The DDL of the WAL harvest's ledger table, {@code <table>_wal_ledger}: rows per slot naming the messages a
     * leader finished above the slot's confirmed position, so that the next leader does not send them again (see
     * {@link StreamHarvest.Ledger}). Idempotent; {@link #createSchema()} runs it with the WAL harvest.
     */
    public String walLedgerSql() {
        requireWal("walLedgerSql");
        return ledgerDdl;
    }

    private void requireWal(String operation) {
        if (wal == null) {
            throw new IllegalStateException(operation + " needs the WAL harvest (PostgresStore.Builder.walHarvest);"
                    + " " + names.outbox() + " is harvested from its table");
        }
    }

    /**
     * Runs {@code work} in a transaction of its own, after {@code settings} (a {@code SELECT set_config(...)}
     * local to the transaction), on a connection bounded as {@link #withHandle} describes.
     */
    private <T> T inTransaction(String operation, String settings, Work<T> work) {
        return withHandle(operation, handle -> handle.inTransaction(h -> {
            h.createQuery(settings).mapTo(String.class).one();
            return work.run(h);
        }));
    }

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

    private static Argument uuid(UUID value) {
        return (position, statement, context) -> statement.setObject(position, value);
    }

    private static Argument bigints(Long[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("bigint", values));
    }

    private static Argument texts(String[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("text", values));
    }

    /**
     * Configures a {@link PostgresStore}: {@link #schema}, {@link #table}, {@link #statementTimeout} and
     * {@link #maxKeyLength}, whose default here is no limit beyond Postgres' own. Not thread-safe; {@link #build()}
     * returns an immutable store. Every setter rejects a bad value at once, naming it.
     */
    public static final class Builder extends SqlStore.Builder<Builder, PostgresStore> {
        private WalHarvest wal;
        private boolean commitNotifications = true;

        /**
         * Whether the leader is woken by Postgres' {@code LISTEN/NOTIFY} when rows are committed, so that an idle
         * outbox publishes within milliseconds instead of at the leader's next poll (up to {@code pollInterval}).
         * With it on, this store's publisher calls {@code pg_notify} in the writer's transaction (Postgres delivers
         * it at commit, one per transaction), and the leader holds one connection of the store's pool for as long
         * as it leads, listening. Polling stays the safety net: a notification lost with a connection delays a row,
         * never loses it. Plain-SQL writers notify through {@link PostgresStore#notifyTriggerSql()}. Ignored by the
         * WAL harvest, which is pushed to anyway. Default: on.
         */
        public Builder commitNotifications(boolean on) {
            this.commitNotifications = on;
            return this;
        }

        private Builder(Jdbi jdbi) {
            super(jdbi, PostgresDialect.DIALECT, PostgresStore::new);
        }

        /**
         * Harvests the write-ahead log instead of the table: the publisher emits each message as a transactional
         * logical message, and the leading dispatcher streams them from a replication slot (see
         * {@link WalHarvest}). Default: none, the table is harvested.
         */
        public Builder walHarvest(WalHarvest wal) {
            this.wal = Objects.requireNonNull(wal, "wal must not be null");
            return this;
        }
    }
}
