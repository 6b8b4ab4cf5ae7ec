package dev.outbox.store.mysql;

import dev.outbox.MessageIds;
import dev.outbox.OutboxRecord;
import dev.outbox.Header;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.SqlStore;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Handles;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlStatement;

import javax.sql.DataSource;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * The outbox on MySQL 8.0 or MariaDB 10.6 and newer (InnoDB): a {@link Store} on Jdbi 3 and MySQL Connector/J.
 *
 * <pre>{@code
 * MySqlStore store = MySqlStore.builder(dataSource)   // or builder(jdbi)
 *         .schema("app")                             // optional: default is the connection's database
 *         .table("outbox")                           // default "outbox"; parked rows go to "outbox_parked"
 *         .build();
 * store.createSchema();                              // idempotent; or run schemaSql() with your migrations
 * }</pre>
 *
 * <h2>Isolation: READ COMMITTED, one transaction at a time</h2>
 * Every call runs in a short transaction of its own, which the store begins with
 * {@code SET TRANSACTION ISOLATION LEVEL READ COMMITTED}: the level applies to that one transaction, whatever the
 * connection's (or the server's) default, and the connection is handed back unchanged. At InnoDB's default,
 * REPEATABLE READ, locking reads and updates take next-key (gap) locks on the index ranges they scan; a lock on
 * the gap after the newest row would block every application {@code INSERT} into the outbox until the mark
 * commits. At READ COMMITTED, InnoDB locks only the index records it returns or changes, never gaps.
 *
 * <h2>Mark without RETURNING</h2>
 * MySQL has no {@code UPDATE ... RETURNING}, so a mark is one transaction of three statements ({@code leader_id}
 * holds 16 zero bytes, the nil UUID, in a row nobody has marked, so that a mark rewrites rows in place):
 * <ol>
 *   <li>{@code SELECT id FROM t WHERE leader_id <> ? ORDER BY id LIMIT ?} — a consistent,
 *       non-locking read of the head of the primary key: it sees only committed rows, never waits for an
 *       application transaction that is still inserting, and locks nothing;</li>
 *   <li>{@code SELECT <columns> FROM t FORCE INDEX (PRIMARY) WHERE id IN (...) ORDER BY id FOR UPDATE} — locks
 *       exactly those rows (record locks on primary-key values, taken in ascending id order), reading their latest
 *       committed version; a row deleted meanwhile is gone, a row another mark took meanwhile is taken over unless
 *       that mark used the same leader id;</li>
 *   <li>{@code UPDATE t SET leader_id = ? WHERE id IN (...)}, then {@code COMMIT}.</li>
 * </ol>
 * No lock is held once the call returns, so none is held across a broker call. {@code FOR UPDATE SKIP LOCKED} is
 * not used: it would skip the rows a purge, reset or old leader's mark holds at that moment, and a new leader must
 * take over an old leader's rows, in order. The first step already leaves out rows whose insert has not
 * committed, without waiting for them. Marks of different leaders that pick the same rows serialize on their
 * row locks, and the rows end up with the leader id of the mark that committed last. If the database reports a
 * deadlock anyway, the call fails with a retriable {@link StoreException} and changed nothing.
 *
 * <h2>Read (the cursor harvest)</h2>
 * {@link #read} is one consistent, non-locking read of the primary key, in a READ COMMITTED transaction like every
 * other call:
 * {@code SELECT <columns> FROM t FORCE INDEX (PRIMARY) WHERE id > ? OR id BETWEEN ? AND ? OR ... ORDER BY id LIMIT ?},
 * one {@code BETWEEN} per recheck range (overlapping and adjacent ranges merged first). InnoDB answers it with a
 * range scan of the primary key in id order, without a sort. It sees only committed rows, locks nothing, and
 * neither waits for nor blocks an application transaction. Up to {@value #MAX_RECHECK_RANGES_PER_STATEMENT}
 * ranges go into one statement; a read given more runs one statement per {@value #MAX_RECHECK_RANGES_PER_STATEMENT}
 * ranges, from the highest ids down (the first with {@code id > ?}), and keeps the lowest {@code limit} ids of all.
 * Each statement then has its own snapshot, each later than the one before, so a row returned by one statement
 * has every row committed before it, at a lower id in a range of the read, returned as well (unless the limit
 * cuts both): a key's causal order holds; a row at a lower id that commits between two statements and is not
 * returned stays in a gap and is rechecked. A row without a {@code message_id} (a table older than the column) is
 * given one, stored before the read returns (an {@code UPDATE} of those rows only, in the read's transaction),
 * exactly as a mark does.
 *
 * <p><b>Late commits are bounded by time.</b> InnoDB offers no portable, unprivileged way to learn the oldest
 * running transaction ({@code information_schema.innodb_trx} needs the {@code PROCESS} privilege), so the read
 * cannot tell an id whose transaction is still open from one that rolled back. It assumes instead that a writer
 * transaction commits within the {@link Builder#lateCommitWindow late-commit window} (default 60 s) of taking its
 * ids: the {@link ReadResult}'s ordinals are milliseconds of a monotonic clock ({@link System#nanoTime()}, never the
 * wall clock, which can step), {@code horizon} the time before the read and {@code gapToken} the time after it plus
 * the window. The harvest thus rechecks an id it passed without seeing for at least the window after the read that
 * passed it, then assumes it rolled back. <b>The limitation:</b> a row whose transaction commits later than that
 * is published only when the leader next reads the table from its head ({@code DispatcherConfig.rescanInterval},
 * 30 s by default) — late, and possibly after a later row of its key. Keep writer transactions that publish into
 * the outbox shorter than the window, or raise the window above your longest one.
 *
 * <h2>Other calls</h2>
 * Purge ({@code DELETE FROM t WHERE id IN (...)}, with an index hint), reset, park
 * ({@code INSERT ... SELECT} into the parked table, then {@code DELETE}, in one transaction) and replay (the reverse)
 * take their ids as bound parameters of {@code IN (...)} lists, at most {@value #MAX_IDS_PER_STATEMENT} per
 * statement, all statements of a call in one transaction. Every locking read and {@code DELETE} looks its rows up in
 * the primary key, by an index hint: on a table the optimizer believes small it would otherwise scan the table,
 * and a locking read or a {@code DELETE} waits for the lock of every row it scans, including the rows of every
 * application transaction that has inserted and not yet committed.
 *
 * <h2>Storage fencing</h2>
 * With {@link Builder#fencing} on (the default), the leader table ({@code <table>_leader}, one row) holds the outbox's
 * leader epoch. {@link #acquireEpoch()} increments it ({@code INSERT ... ON DUPLICATE KEY UPDATE}, which takes the
 * row's exclusive lock). MySQL has no data-modifying CTE, so a write of a {@linkplain #fencedBy fenced view} (mark,
 * purge, reset, failure record, park) begins its transaction with a locking read of the row
 * ({@code LOCK IN SHARE MODE}), held until it commits, and changes nothing unless the epoch is its own. The increment
 * and the fenced writes serialize on the row: a write that holds the share lock commits before the increment can, and
 * a write whose read waited for the increment reads the new epoch and fails with
 * {@link dev.outbox.spi.StoreFencedException}. One more statement per write transaction.
 *
 * <h2>Shards</h2>
 * With {@link Builder#shards shards(n)} above 1, the DDL adds a stored generated column {@code shard} (the md5 of the
 * key modulo n, {@link dev.outbox.OutboxShards#shardOf}) and an index on {@code (shard, id)}; {@link #shard}{@code (i)}
 * is this store with {@code shard = i} in the conditions of its mark, read, backlog and oldest create time, walking
 * that index ({@code FORCE INDEX}) where the whole outbox walks the primary key, and with its epoch in row
 * {@code i + 1} of the leader table. The store refuses a table made for another count ({@link #checkShards()});
 * {@link #reshard()} changes a table's count while no dispatcher runs. See the README's "Sharded harvest".
 *
 * <h2>Timeouts</h2>
 * Every statement carries the configured {@link Builder#statementTimeout statement timeout} as a JDBC query
 * timeout (whole seconds, rounded up; Connector/J then cancels the statement with {@code KILL QUERY}, which also
 * ends a lock wait), and while the store uses a connection it sets the connection's network timeout to twice the
 * statement timeout, so that even a silent network failure ends the call. The network timeout is restored before
 * the connection is returned.
 *
 * <h2>Rows written by hand</h2>
 * Any language may write messages with a plain {@code INSERT} (see {@link MySqlPublisher#insertSql()}). A row that
 * is not a valid message (malformed {@code headers} JSON, an invalid topic, a key longer than
 * {@link Builder#maxKeyLength}) is marked like any other and returned in {@link MarkResult#rejected()} with a reason
 * naming the bad value, so the dispatcher parks it; other rows and keys carry on.
 *
 * <p>Immutable and thread-safe.
 */
public final class MySqlStore extends SqlStore {
    /** The default and the schema's longest key, in code points: {@code VARCHAR(1024)}. */
    public static final int DEFAULT_MAX_KEY_LENGTH = MySqlDialect.DEFAULT_MAX_KEY_LENGTH;
    /** The most ids bound into one {@code IN (...)} list; larger batches take several statements. */
    public static final int MAX_IDS_PER_STATEMENT = 1_000;
    /** Reasons longer than this many characters are cut when a row is parked ({@code TEXT} holds 64 KiB). */
    static final int MAX_REASON_LENGTH = 8_000;
    /** The default {@link Builder#lateCommitWindow late-commit window}. */
    public static final Duration DEFAULT_LATE_COMMIT_WINDOW = Duration.ofSeconds(60);
    /** The longest {@link Builder#lateCommitWindow late-commit window}. */
    public static final Duration MAX_LATE_COMMIT_WINDOW = Duration.ofDays(1);
    /**
     * The most recheck ranges one read statement carries (two placeholders each); a read given more takes several
     * statements (see the class Javadoc). MySQL's range optimizer keeps this many ranges well inside its default
     * {@code range_optimizer_max_mem_size}.
     */
    static final int MAX_RECHECK_RANGES_PER_STATEMENT = 500;
    /** The origin of the read's monotonic clock. */
    private static final long CLOCK_ORIGIN = System.nanoTime();

    private static final String READ_COMMITTED = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED";
    /** The {@code leader_id} of a row nobody has marked: 16 zero bytes, the nil UUID. */
    static final String UNMARKED = "X'00000000000000000000000000000000'";
    private static final UUID NIL = new UUID(0, 0);

    private final MySqlPublisher publisher;

    /** The in-place upgrade of tables created before message ids. */
    static final String UPGRADE_RESOURCE = "dev/outbox/store/mysql/upgrade-message-id.sql";
    /** The in-place upgrade of tables created before per-key retries (the next_attempt_at column). */
    static final String UPGRADE_NEXT_ATTEMPT_RESOURCE = "dev/outbox/store/mysql/upgrade-next-attempt.sql";
    /**
     * A version 7 UUID as a MySQL expression, for the column default of plain-SQL writers: 12 hex digits of Unix
     * milliseconds, the version digit 7, 12 random bits, the variant (10) and 62 random bits. (MariaDB has
     * {@code RANDOM_BYTES} since 10.10.)
     */
    /**
     * The SQL expression the DDL uses as the {@code message_id} column default: a version 7 UUID as
     * {@code BINARY(16)} (the schema's {@code ${uuidv7}}), for migrations that ship the DDL outside this class.
     */
    public static final String UUIDV7_EXPRESSION = "UNHEX(CONCAT(LPAD(HEX(FLOOR(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000)),"
            + " 12, '0'), '7', SUBSTR(HEX(RANDOM_BYTES(2)), 2, 3), HEX(128 | (ASCII(RANDOM_BYTES(1)) & 63)),"
            + " HEX(RANDOM_BYTES(7))))";

    private final String candidatesSql;
    private final String backlogSql;
    private final String parkedCountSql;
    private final String oldestSql;
    private final String parkedSql;
    private final String takeEpochSql;
    private final String epochSql;
    private final String fenceSql;
    private final Duration lateCommitWindow;
    private final long lateCommitWindowMillis;
    /** The whole outbox, for the view of one shard; null for the whole outbox itself. */
    private final MySqlStore whole;
    /** The views of the shards ({@link #shard}), for a sharded whole outbox; empty otherwise. */
    private final List<MySqlStore> views;
    /** The index the harvest walks: the primary key, or for a shard's view the {@code (shard, id)} index. */
    private final String harvestIndex;

    private MySqlStore(Builder builder) {
        this(builder, -1, null);
    }

    private MySqlStore(Builder builder, int shard, MySqlStore whole) {
        super(builder, shard);
        this.whole = whole;
        this.publisher = whole != null ? whole.publisher : new MySqlPublisher(names, maxKeyLength(), decorators());
        if (whole == null) {
            wakeOnCommitted(publisher); // MySQL cannot notify: a publisher in this process can (Publisher.committed)
        }
        this.harvestIndex = shard < 0 ? "PRIMARY" : "`" + names.table() + "_shard`";
        this.lateCommitWindow = builder.lateCommitWindow;
        this.lateCommitWindowMillis = lateCommitWindow.toMillis();

        String t = names.outbox();
        // A shard's view walks the (shard, id) index: its rows in id order, past no row of another shard.
        this.candidatesSql = "SELECT id FROM " + t + " FORCE INDEX (" + harvestIndex + ") WHERE " + shardAnd()
                + "leader_id <> ? ORDER BY id LIMIT ?";
        String inShard = shard < 0 ? "" : " WHERE shard = " + shard;
        this.backlogSql = "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM " + t + inShard + " LIMIT "
                + (EXACT_BACKLOG_LIMIT + 1) + ") head), (SELECT " + (shard < 0 ? "MAX(id) - MIN(id) + 1"
                : "(MAX(id) - MIN(id) + 1) DIV " + shardCount()) + " FROM " + t + inShard + ")";
        this.parkedSql = "SELECT id, topic, `key`, attempts, reason, UNIX_TIMESTAMP(parked_at), message_id FROM "
                + names.parked() + " ORDER BY id LIMIT ?";
        this.parkedCountSql = "SELECT COUNT(*) FROM " + names.parked();
        this.oldestSql = "SELECT UNIX_TIMESTAMP(create_time) FROM " + names.outbox()
                + (shard < 0 ? "" : " FORCE INDEX (" + harvestIndex + ")" + inShard) + " ORDER BY id LIMIT 1";
        String l = names.leader();
        // Each shard has its epoch in a row of its own (shard + 1); a sharded outbox's whole store, row 0.
        this.takeEpochSql = "INSERT INTO " + l + " (id, epoch) VALUES (" + leaderRow() + ", 1) ON DUPLICATE KEY UPDATE"
                + " epoch = epoch + 1, acquired_at = CURRENT_TIMESTAMP(6)";
        this.epochSql = "SELECT epoch FROM " + l + " WHERE id = " + leaderRow();
        // MariaDB has no FOR SHARE before 10.10; both servers take LOCK IN SHARE MODE.
        this.fenceSql = epochSql + " LOCK IN SHARE MODE";
        List<MySqlStore> shards = new ArrayList<>();
        if (shard < 0 && shardCount() > 1) {
            for (int i = 0; i < shardCount(); i++) {
                shards.add(new MySqlStore(builder, i, this));
            }
        }
        this.views = List.copyOf(shards);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view is a store of this class over the same table whose mark, read, backlog and oldest create time add
     * {@code shard = <index>} to their conditions and walk the {@code (shard, id)} index, and whose epoch is the
     * leader table's row {@code index + 1}.
     */
    @Override
    public Store shard(int index) {
        dev.outbox.OutboxShards.checkIndex(index, shards());
        return views.isEmpty() ? this : views.get(index);
    }

    /** A shard's view is woken by the whole outbox's publishers: a commit to any shard wakes every shard. */
    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        return whole != null ? whole.watchCommits(wakeUp) : super.watchCommits(wakeUp);
    }

    @Override
    protected Optional<String> shardExpression() {
        return inTransaction("reading the shard column of " + names.outbox(), handle ->
                timed(handle.createQuery("SELECT generation_expression FROM information_schema.columns"
                        + " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? AND column_name = 'shard'"
                        + " AND generation_expression IS NOT NULL AND generation_expression <> ''"))
                        .bind(0, names.schema()).bind(1, names.table()).mapTo(String.class).findOne());
    }

    /**
     * {@inheritDoc}
     *
     * <p>MySQL and MariaDB: drops the {@code shard} column and its index if {@code fromShards} is more than 1, adds them back for
     * this count (one {@code ALTER TABLE}, which rebuilds the table), and widens the leader table's id to
     * {@code SMALLINT} (for 1 shard, deletes the other shards' epoch rows). Each statement commits on its own (DDL
     * is not transactional here): run it again if it stops half-way.
     */
    @Override
    public String reshardSql(int fromShards) {
        dev.outbox.OutboxShards.checkCount(fromShards);
        String t = names.outbox();
        String l = names.leader();
        String index = "`" + names.table() + "_shard`";
        // MySQL 8 has no DROP COLUMN IF EXISTS: the caller says whether the table has the column.
        StringBuilder sql = new StringBuilder();
        if (fromShards > 1) {
            sql.append("ALTER TABLE ").append(t).append(" DROP INDEX ").append(index).append(", DROP COLUMN shard;\n");
        }
        if (shardCount() > 1) {
            sql.append("ALTER TABLE ").append(t).append(" ADD COLUMN shard SMALLINT AS (")
                    .append(shardSql("`key`", shardCount())).append(") STORED, ADD KEY ")
                    .append(index).append(" (shard, id);\n")
                    .append("ALTER TABLE ").append(l).append(" MODIFY id SMALLINT NOT NULL;\n");
        } else {
            sql.append("DELETE FROM ").append(l).append(" WHERE id <> 1;\n");
        }
        return sql.toString();
    }

    /**
     * The MySQL and MariaDB expression of {@link dev.outbox.OutboxShards#shardOf}{@code (key, count)} for a string
     * column or value {@code key}: its md5's first 8 hex digits read as an unsigned 32-bit integer, modulo
     * {@code count}. {@code MD5} hashes the string's bytes in its character set, utf8mb4 in the outbox table.
     */
    static String shardSql(String key, int count) {
        return "CAST(CONV(SUBSTR(MD5(" + key + "), 1, 8), 16, 10) AS UNSIGNED) % " + count;
    }

    /**
     * {@inheritDoc}
     *
     * <p>An upsert of the leader row ({@code INSERT ... ON DUPLICATE KEY UPDATE epoch = epoch + 1}), which takes the
     * row's exclusive lock, and a read of the new epoch, in one transaction.
     */
    @Override
    protected long takeEpoch() {
        return inTransaction("taking the leader epoch" + shardName() + " in " + names.leader() + " (storage fencing: the table is created"
                + " by createSchema() and the shipped migrations; Builder.fencing(false) turns fencing off)", handle -> {
                    timed(handle.createUpdate(takeEpochSql)).execute();
                    return timed(handle.createQuery(epochSql)).mapTo(Long.class).one();
                });
    }

    /**
     * The fence of a write, its transaction's first statement: reads the leader row with a share lock, held until
     * the transaction ends, and refuses the write unless the epoch is {@code fence}. An increment of the epoch waits
     * for the lock (so the write commits first), or the read waits for the increment's lock and then reads the new
     * epoch (a locking read reads the latest committed version). Nothing for an unfenced write.
     */
    private void fence(Handle handle, String operation, long fence) {
        if (fence == UNFENCED) {
            return;
        }
        checkFence(operation, fence, timed(handle.createQuery(fenceSql)).mapTo(Long.class).findOne().orElse(null));
    }

    /**
     * Starts a builder for a MySQL or MariaDB store on the connections of {@code jdbi}, or, with the other entry
     * point, of a pooling data source.
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    /** See {@link #builder(Jdbi)}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(jdbi(dataSource));
    }

    @Override
    public MySqlPublisher publisher() {
        return publisher;
    }

    /**
     * DDL commits implicitly in MySQL, so the two tables are created one after the other, each atomically; the DDL
     * is split into statements at {@code ;} ending a line. A named lock serializes concurrent creators.
     */
    @Override
    protected void createTables(String ddl) {
        List<String> statements = statements(ddl);
        withHandle("creating the outbox schema for " + names.outbox(), handle -> {
            // Serializes concurrent creators (CREATE TABLE IF NOT EXISTS is safe anyway; this keeps the log quiet).
            // Lock names are limited to 64 characters: a hash of the table names stands for them.
            String lock = "dev.outbox.schema." + Integer.toHexString(names.outbox().hashCode());
            handle.createQuery("SELECT GET_LOCK(?, ?)").bind(0, lock).bind(1, queryTimeoutSeconds())
                    .mapTo(Integer.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.setQueryTimeout(queryTimeoutSeconds());
                for (String sql : statements) {
                    statement.execute(sql);
                }
                if (needsUpgrade(handle)) {
                    log.info("Adding the message_id column to {} and {}", names.outbox(), names.parked());
                    for (String sql : statements(upgradeSql())) {
                        statement.execute(sql);
                    }
                }
                if (lacksNextAttempt(handle)) {
                    log.info("Adding the next_attempt_at column to {}", names.outbox());
                    for (String sql : statements(render(UPGRADE_NEXT_ATTEMPT_RESOURCE))) {
                        statement.execute(sql);
                    }
                }
            } finally {
                handle.createQuery("SELECT RELEASE_LOCK(?)").bind(0, lock).mapTo(Integer.class).one();
            }
            return null;
        });
    }

    /** Whether the outbox or its parked table lacks the message_id column (created before message ids). */
    private boolean needsUpgrade(Handle handle) {
        var query = timed(handle.createQuery("SELECT COUNT(*) FROM information_schema.columns"
                + " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name IN (?, ?)"
                + " AND column_name = 'message_id'"));
        return query.bind(0, names.schema()).bind(1, names.table()).bind(2, names.parkedTable())
                .mapTo(Integer.class).one() < 2;
    }

    /** Whether the outbox table lacks the next_attempt_at column (created before per-key retries). */
    private boolean lacksNextAttempt(Handle handle) {
        var query = timed(handle.createQuery("SELECT COUNT(*) FROM information_schema.columns"
                + " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?"
                + " AND column_name = 'next_attempt_at'"));
        return query.bind(0, names.schema()).bind(1, names.table()).mapTo(Integer.class).one() == 0;
    }

    /** Fills in the message-id expression, {@code ${uuidv7}}. */
    @Override
    protected String fillIn(String sql) {
        String filled = sql.replace("${uuidv7}", UUIDV7_EXPRESSION);
        if (shardCount() == 1) {
            return filled;
        }
        String nextAttempt = "    next_attempt_at TIMESTAMP(6) NULL DEFAULT NULL,     -- set by a failed delivery: not"
                + " retried before this time\n";
        String leaderId = "    id          TINYINT       NOT NULL,                 -- always 1\n";
        if (!filled.contains(nextAttempt) || !filled.contains(leaderId)) {
            return filled; // another template (an upgrade): nothing to add
        }
        // The shard column and its index are part of the CREATE TABLE: a table created without them is left as it
        // is, and the store refuses it, naming both shard counts.
        return filled.replace(nextAttempt, nextAttempt + "    shard       SMALLINT      AS (" + shardSql("`key`",
                        shardCount()) + ") STORED, -- OutboxShards.shardOf(key, " + shardCount() + ")\n"
                        + "    KEY `" + names.table() + "_shard` (shard, id), -- each shard's harvest walks it in id"
                        + " order\n")
                .replace(leaderId, "    id          SMALLINT      NOT NULL,                 -- 0: the whole outbox;"
                        + " 1 + i: shard i\n");
    }

    /**
     * The in-place upgrade of tables created before message ids (the {@code upgrade-message-id.sql} resource of this
     * package), names filled in: statements separated by {@code ;} at the end of a line. {@link #createSchema()} runs
     * it when the {@code message_id} column is missing.
     */
    public String upgradeSql() {
        return render(UPGRADE_RESOURCE);
    }

    @Override
    protected MarkResult mark(UUID leaderId, int limit, long fence) {
        return mark(leaderId, limit, fence, handle -> {
        });
    }

    /** {@link #mark}, running {@code whileLocked} after the update and before the commit; for tests. */
    MarkResult mark(UUID leaderId, int limit, Consumer<Handle> whileLocked) {
        return mark(leaderId, limit, UNFENCED, whileLocked);
    }

    private MarkResult mark(UUID leaderId, int limit, long fence, Consumer<Handle> whileLocked) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        if (leaderId.equals(NIL)) {
            throw new IllegalArgumentException("leaderId must not be the nil UUID " + NIL
                    + ": in leader_id it stands for an unmarked row");
        }
        limit(limit);
        byte[] leader = RowReader.bytes(leaderId);
        requireShards();
        String operation = "marking up to " + limit + " rows of " + names.outbox() + shardName() + " for leader "
                + leaderId;
        return inTransaction(operation,
                handle -> {
                    fence(handle, operation, fence);
                    List<Long> candidates = timed(handle.createQuery(candidatesSql))
                            .bind(0, leader).bind(1, limit).mapTo(Long.class).list();
                    if (candidates.isEmpty()) {
                        return MarkResult.of(List.of());
                    }
                    List<MarkedRow> rows = new ArrayList<>(candidates.size());
                    List<Long> marked = new ArrayList<>(candidates.size());
                    Map<Long, UUID> unnamed = new TreeMap<>();
                    for (List<Long> chunk : chunks(candidates, MAX_IDS_PER_STATEMENT)) {
                        bindIds(timed(handle.createQuery("SELECT " + RowReader.COLUMNS + " FROM " + names.outbox()
                                + " FORCE INDEX (PRIMARY) WHERE id IN (" + placeholders(chunk.size())
                                + ") ORDER BY id FOR UPDATE")), 0,
                                chunk)
                                .scanResultSet((supplier, context) -> {
                                    var rs = supplier.get();
                                    while (rs.next()) {
                                        if (Arrays.equals(leader, rs.getBytes(7))) {
                                            continue; // a concurrent mark with the same leader id took it
                                        }
                                        MarkedRow row = readable(RowReader.read(rs, leaderId, maxKeyLength()),
                                                unnamed);
                                        rows.add(row);
                                        marked.add(row.id());
                                    }
                                    return null;
                                });
                    }
                    for (List<Long> chunk : chunks(marked, MAX_IDS_PER_STATEMENT)) {
                        bindIds(timed(handle.createUpdate("UPDATE " + names.outbox() + " SET leader_id = ?"
                                + " WHERE id IN (" + placeholders(chunk.size()) + ")")).bind(0, leader), 1, chunk)
                                .execute();
                    }
                    assignMessageIds(handle, unnamed);
                    whileLocked.accept(handle);
                    return marked(rows);
                });
    }

    /** True: see the class Javadoc's "Read" section. */
    @Override
    protected boolean hasRead() {
        return true;
    }

    /**
     * One consistent, non-locking read of the primary key (several for more than
     * {@value #MAX_RECHECK_RANGES_PER_STATEMENT} recheck ranges); the ordinals of the result are milliseconds of a
     * monotonic clock, {@code gapToken} exceeding {@code horizon} by the {@link Builder#lateCommitWindow late-commit
     * window} and the time the read took. See the class Javadoc's "Read" section, and its limitation for writer
     * transactions longer than the window.
     */
    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        if (after < 0) {
            throw new IllegalArgumentException("after must be at least 0: " + after);
        }
        List<IdRange> ranges = merged(recheck);
        limit(limit);
        requireShards();
        long horizon = monotonicMillis();
        MarkResult rows = inTransaction("reading up to " + limit + " rows of " + names.outbox() + shardName()
                + " above id " + after
                + (ranges.isEmpty() ? "" : " and in " + ranges.size() + " recheck range(s)"),
                handle -> readRows(handle, after, ranges, limit));
        return new ReadResult(rows, monotonicMillis() + lateCommitWindowMillis, horizon);
    }

    /** How long a read's gap is rechecked before it is taken to have rolled back. */
    public Duration lateCommitWindow() {
        return lateCommitWindow;
    }

    /** Milliseconds of the monotonic clock the read's ordinals count, at least 1. */
    static long monotonicMillis() {
        return 1 + (System.nanoTime() - CLOCK_ORIGIN) / 1_000_000;
    }

    /** The rows of {@link #read}: one statement per chunk of ranges, the highest ids first, the lowest kept. */
    private MarkResult readRows(Handle handle, long after, List<IdRange> ranges, int limit) {
        TreeMap<Long, MarkedRow> read = new TreeMap<>();
        List<List<IdRange>> chunks = new ArrayList<>();
        List<IdRange> descending = new ArrayList<>(ranges);
        descending.sort(Comparator.comparingLong(IdRange::from).reversed());
        for (int from = 0; from == 0 || from < descending.size(); from += MAX_RECHECK_RANGES_PER_STATEMENT) {
            chunks.add(descending.subList(from, Math.min(descending.size(), from + MAX_RECHECK_RANGES_PER_STATEMENT)));
        }
        Map<Long, UUID> unnamed = new TreeMap<>();
        for (int c = 0; c < chunks.size(); c++) {
            List<IdRange> chunk = chunks.get(c);
            boolean head = c == 0;
            var query = timed(handle.createQuery(readSql(head, chunk.size())));
            int p = 0;
            if (head) {
                query.bind(p++, after);
            }
            for (IdRange range : chunk) {
                query.bind(p++, range.from()).bind(p++, range.to());
            }
            query.bind(p, limit).scanResultSet((supplier, context) -> {
                var rs = supplier.get();
                while (rs.next()) {
                    if (read.containsKey(rs.getLong(1))) {
                        continue; // a range above the cursor: the head statement read it already
                    }
                    UUID leader = RowReader.uuid(rs.getBytes(7));
                    MarkedRow row = RowReader.read(rs, NIL.equals(leader) ? null : leader, maxKeyLength());
                    read.put(row.id(), readable(row, unnamed));
                }
                return null;
            });
        }
        while (read.size() > limit) {
            unnamed.remove(read.pollLastEntry().getKey());
        }
        List<MarkedRow> rows = new ArrayList<>(read.values());
        if (!unnamed.isEmpty()) {
            assignMessageIds(handle, unnamed);
            rows = withStoredMessageIds(handle, rows, unnamed.keySet());
        }
        return marked(rows);
    }

    /**
     * The read statement: {@code id > ?} if {@code head}, and {@code ranges} {@code BETWEEN}s, the lowest ids first.
     * {@code FORCE INDEX} keeps it a range scan of the primary key even when most of a small table matches.
     */
    String readSql(boolean head, int ranges) {
        StringBuilder where = new StringBuilder(head ? "id > ?" : "");
        for (int i = 0; i < ranges; i++) {
            where.append(where.length() == 0 ? "" : " OR ").append("id BETWEEN ? AND ?");
        }
        return "SELECT " + RowReader.COLUMNS + " FROM " + names.outbox() + " FORCE INDEX (" + harvestIndex + ") WHERE "
                + (shardIndex() < 0 ? where : shardAnd() + "(" + where + ")") + " ORDER BY id LIMIT ?";
    }

    /** The mark's first statement (its candidates), for tests that check plans. */
    String candidatesSql() {
        return candidatesSql;
    }

    /** {@code " (shard <i>)"} for a shard's view, for messages; empty for the whole outbox. */
    private String shardName() {
        return shardIndex() < 0 ? "" : " (shard " + shardIndex() + ")";
    }

    /**
     * {@code rows} with the message ids the database holds for {@code ids}, which this read has just stored unless
     * a concurrent call stored others first (a read locks no rows until it stores ids).
     */
    private List<MarkedRow> withStoredMessageIds(Handle handle, List<MarkedRow> rows, Collection<Long> ids) {
        Map<Long, UUID> stored = new TreeMap<>();
        for (List<Long> chunk : chunks(new ArrayList<>(ids), MAX_IDS_PER_STATEMENT)) {
            bindIds(timed(handle.createQuery("SELECT id, message_id FROM " + names.outbox() + " WHERE id IN ("
                    + placeholders(chunk.size()) + ")")), 0, chunk).map((rs, ctx) -> {
                        stored.put(rs.getLong(1), RowReader.uuid(rs.getBytes(2)));
                        return null;
                    }).list();
        }
        List<MarkedRow> out = new ArrayList<>(rows.size());
        for (MarkedRow row : rows) {
            UUID id = stored.get(row.id());
            if (id != null && row instanceof MarkedRow.Readable readable && !id.equals(readable.record().messageId())) {
                OutboxRecord r = readable.record();
                row = new MarkedRow.Readable(new OutboxRecord(r.id(), r.createdAt(), r.message(), r.attempts(),
                        r.leaderId(), id, r.nextAttemptAt()));
            }
            out.add(row);
        }
        return out;
    }

    /** The recheck ranges, checked, ascending, overlapping and adjacent ones merged. */
    private static List<IdRange> merged(List<IdRange> recheck) {
        Objects.requireNonNull(recheck, "recheck must not be null");
        List<IdRange> sorted = new ArrayList<>(recheck.size());
        for (int i = 0; i < recheck.size(); i++) {
            if (recheck.get(i) == null) {
                throw new IllegalArgumentException("recheck contains null at position " + i);
            }
            sorted.add(recheck.get(i));
        }
        sorted.sort(Comparator.comparingLong(IdRange::from));
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

    /** {@code row}, given a new message id (noted in {@code unnamed}) if it is a record without one. */
    private static MarkedRow readable(MarkedRow row, Map<Long, UUID> unnamed) {
        if (row instanceof MarkedRow.Readable readable && readable.record().messageId() == null) {
            return new MarkedRow.Readable(withNewMessageId(readable.record(), unnamed));
        }
        return row;
    }

    /** {@code record} with a new message id, noted in {@code unnamed} to be stored by the mark. */
    private static OutboxRecord withNewMessageId(OutboxRecord record, Map<Long, UUID> unnamed) {
        UUID id = MessageIds.next();
        unnamed.put(record.id(), id);
        return new OutboxRecord(record.id(), record.createdAt(), record.message(), record.attempts(),
                record.leaderId(), id, record.nextAttemptAt());
    }

    /**
     * Stores the message ids the mark (or read) gave to rows that had none (rows older than the column), in its
     * transaction, before any of them is published; a row that has one by now keeps it.
     */
    private void assignMessageIds(Handle handle, Map<Long, UUID> unnamed) {
        List<Long> ids = new ArrayList<>(unnamed.keySet());
        for (List<Long> chunk : chunks(ids, MAX_IDS_PER_STATEMENT / 2)) {
            StringBuilder cases = new StringBuilder("CASE id");
            for (int i = 0; i < chunk.size(); i++) {
                cases.append(" WHEN ? THEN ?");
            }
            var update = timed(handle.createUpdate("UPDATE " + names.outbox() + " SET message_id = " + cases
                    + " END WHERE id IN (" + placeholders(chunk.size()) + ") AND message_id IS NULL"));
            int p = 0;
            for (Long id : chunk) {
                update.bind(p++, id.longValue()).bind(p++, RowReader.bytes(unnamed.get(id)));
            }
            bindIds(update, p, chunk).execute();
        }
    }

    @Override
    protected void purge(Collection<Long> ids, long fence) {
        List<Long> sorted = ids("ids", ids);
        if (sorted.isEmpty()) {
            return;
        }
        String operation = "purging " + sorted.size() + " rows of " + names.outbox();
        inTransaction(operation, handle -> {
            fence(handle, operation, fence);
            for (List<Long> chunk : chunks(sorted, MAX_IDS_PER_STATEMENT)) {
                executeWithIds(handle, deleteSql(names.outbox(), names.table(), chunk.size()), chunk);
            }
            return null;
        });
    }

    /**
     * Runs {@code sql}, whose only parameters are the {@code ids}, as a plain JDBC statement on the handle's
     * connection: the purge's {@code DELETE} changes its text with the number of ids, and Jdbi would lex every new text
     * of up to 1,000 placeholders again (measured: the largest allocator and a third of the purge thread's CPU in a
     * drain), where the driver only has to find the placeholders.
     */
    private int executeWithIds(Handle handle, String sql, List<Long> ids) throws SQLException {
        try (PreparedStatement statement = handle.getConnection().prepareStatement(sql)) {
            statement.setQueryTimeout(queryTimeoutSeconds());
            int position = 1;
            for (Long id : ids) {
                statement.setLong(position++, id);
            }
            return statement.executeUpdate();
        }
    }

    @Override
    protected void reset(UUID leaderId, Collection<Long> ids, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        List<Long> sorted = ids("ids", ids);
        if (sorted.isEmpty()) {
            return;
        }
        byte[] leader = RowReader.bytes(leaderId);
        String operation = "resetting " + sorted.size() + " rows of " + names.outbox();
        inTransaction(operation, handle -> {
            fence(handle, operation, fence);
            for (List<Long> chunk : chunks(sorted, MAX_IDS_PER_STATEMENT)) {
                // attempts is assigned first: MySQL evaluates assignments left to right, and leader_id's
                // expression must see the row's leader id as it was.
                bindIds(timed(handle.createUpdate("UPDATE " + names.outbox() + " SET attempts = attempts + 1,"
                        + " leader_id = CASE WHEN leader_id = ? THEN " + UNMARKED + " ELSE leader_id END"
                        + " WHERE id IN (" + placeholders(chunk.size()) + ")")).bind(0, leader), 1, chunk).execute();
            }
            return null;
        });
    }

    /**
     * One {@code UPDATE ... SET attempts = attempts + 1, next_attempt_at = CASE id WHEN ? THEN FROM_UNIXTIME(?) ...
     * END WHERE id IN (...)} per {@value #MAX_IDS_PER_STATEMENT} / 2 rows, all in one transaction.
     */
    @Override
    protected void retryLater(Map<Long, Instant> nextAttempts, long fence) {
        TreeMap<Long, Instant> sorted = nextAttempts(nextAttempts);
        if (sorted.isEmpty()) {
            return;
        }
        List<Long> all = new ArrayList<>(sorted.keySet());
        String operation = "recording failed deliveries of " + all.size() + " rows of " + names.outbox();
        inTransaction(operation, handle -> {
            fence(handle, operation, fence);
            for (List<Long> chunk : chunks(all, MAX_IDS_PER_STATEMENT / 2)) {
                StringBuilder cases = new StringBuilder("CASE id");
                for (int i = 0; i < chunk.size(); i++) {
                    cases.append(" WHEN ? THEN FROM_UNIXTIME(?)");
                }
                var update = timed(handle.createUpdate("UPDATE " + names.outbox() + " SET attempts = attempts + 1,"
                        + " next_attempt_at = " + cases + " END WHERE id IN (" + placeholders(chunk.size()) + ")"));
                int p = 0;
                for (Long id : chunk) {
                    update.bind(p++, id.longValue()).bind(p++, unixSeconds(sorted.get(id)));
                }
                bindIds(update, p, chunk).execute();
            }
            return null;
        });
    }

    /** An instant as Unix seconds with a microsecond fraction, as {@code FROM_UNIXTIME} takes it. */
    private static BigDecimal unixSeconds(Instant at) {
        return BigDecimal.valueOf(at.getEpochSecond()).add(BigDecimal.valueOf(at.getNano() / 1000, 6));
    }

    @Override
    protected void park(Map<Long, String> reasons, long fence) {
        TreeMap<Long, String> sorted = reasons(reasons, MySqlStore::storable);
        if (sorted.isEmpty()) {
            return;
        }
        List<Long> all = new ArrayList<>(sorted.keySet());
        int chunkSize = MAX_IDS_PER_STATEMENT / 2;
        String operation = "parking " + all.size() + " rows of " + names.outbox();
        inTransaction(operation, handle -> {
            fence(handle, operation, fence);
            for (List<Long> chunk : chunks(all, chunkSize)) {
                List<Long> present = lockIds(handle, names.outbox(), chunk);
                if (present.isEmpty()) {
                    continue;
                }
                StringBuilder reasonCase = new StringBuilder("CASE id");
                for (int i = 0; i < present.size(); i++) {
                    reasonCase.append(" WHEN ? THEN ?");
                }
                reasonCase.append(" END");
                var insert = timed(handle.createUpdate("INSERT INTO " + names.parked()
                        + " (id, create_time, topic, `key`, value, headers, leader_id, attempts, message_id, reason)"
                        + " SELECT id, create_time, topic, `key`, value, headers, leader_id, attempts, message_id, "
                        + reasonCase
                        + " FROM " + names.outbox() + " WHERE id IN (" + placeholders(present.size()) + ")"
                        + " ORDER BY id"));
                int p = 0;
                for (Long id : present) {
                    insert.bind(p++, id).bind(p++, sorted.get(id));
                }
                bindIds(insert, p, present).execute();
                bindIds(timed(handle.createUpdate(deleteSql(names.outbox(), names.table(), present.size()))), 0,
                        present).execute();
            }
            return null;
        });
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        limit(limit);
        return inTransaction("listing parked rows of " + names.parked(), handle ->
                timed(handle.createQuery(parkedSql)).bind(0, limit).map((rs, ctx) -> parkedRecord(rs)).list());
    }

    /**
     * {@inheritDoc}
     *
     * <p>In one transaction: the parked rows are locked, given a message id if they have none (rows older than the
     * column), inserted into the outbox in parked id order and deleted from the parked table; then, for each
     * replayed key, the outbox rows of the key above its first replayed row's parked id, other than the replayed
     * ones, are locked ({@code FOR UPDATE} over the primary key: this waits for writer transactions that inserted
     * rows there and have not committed, bounded by the statement timeout), copied to the tail in id order and
     * deleted. The replayed rows took their ids before that lock, so a writer that commits later takes a higher id.
     */
    @Override
    public int replay(Collection<Long> ids) {
        List<Long> sorted = ids("ids", ids);
        if (sorted.isEmpty()) {
            return 0;
        }
        int replayed = inTransaction("replaying " + sorted.size() + " parked rows into " + names.outbox(), handle -> {
            int count = 0;
            Map<String, Long> firstParkedId = new TreeMap<>();
            Map<String, List<UUID>> replayedIds = new TreeMap<>();
            for (List<Long> chunk : chunks(sorted, MAX_IDS_PER_STATEMENT)) {
                List<Long> present = lockIds(handle, names.parked(), chunk);
                if (present.isEmpty()) {
                    continue;
                }
                String in = " WHERE id IN (" + placeholders(present.size()) + ")";
                Map<Long, UUID> unnamed = new TreeMap<>();
                bindIds(timed(handle.createQuery("SELECT id, `key`, message_id FROM " + names.parked() + in)), 0,
                        present).map((rs, ctx) -> {
                            long id = rs.getLong(1);
                            UUID messageId = RowReader.uuid(rs.getBytes(3));
                            if (messageId == null) {
                                messageId = MessageIds.next();
                                unnamed.put(id, messageId);
                            }
                            firstParkedId.merge(rs.getString(2), id, Math::min);
                            replayedIds.computeIfAbsent(rs.getString(2), k -> new ArrayList<>()).add(messageId);
                            return id;
                        }).list();
                for (Map.Entry<Long, UUID> e : unnamed.entrySet()) {
                    timed(handle.createUpdate("UPDATE " + names.parked() + " SET message_id = ? WHERE id = ?"))
                            .bind(0, RowReader.bytes(e.getValue())).bind(1, e.getKey().longValue()).execute();
                }
                bindIds(timed(handle.createUpdate("INSERT INTO " + names.outbox()
                        + " (topic, `key`, value, headers, message_id) SELECT topic, `key`, value, headers, message_id"
                        + " FROM " + names.parked() + in + " ORDER BY id")), 0, present).execute();
                bindIds(timed(handle.createUpdate(deleteSql(names.parked(), names.parkedTable(), present.size()))), 0,
                        present).execute();
                count += present.size();
            }
            moveBehindReplayed(handle, firstParkedId, replayedIds);
            return count;
        });
        if (replayed > 0) {
            log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        }
        return replayed;
    }

    /** The second half of {@link #replay}: each replayed key's later rows move behind its replayed rows. */
    private void moveBehindReplayed(Handle handle, Map<String, Long> firstParkedId,
                                    Map<String, List<UUID>> replayedIds) {
        List<Long> behind = new ArrayList<>();
        for (Map.Entry<String, Long> e : firstParkedId.entrySet()) {
            java.util.Set<UUID> replayedOfKey = new java.util.HashSet<>(replayedIds.get(e.getKey()));
            timed(handle.createQuery("SELECT id, message_id FROM " + names.outbox() + " FORCE INDEX (PRIMARY)"
                    + " WHERE id > ? AND `key` = ? ORDER BY id FOR UPDATE"))
                    .bind(0, e.getValue().longValue()).bind(1, e.getKey())
                    .map((rs, ctx) -> {
                        if (!replayedOfKey.contains(RowReader.uuid(rs.getBytes(2)))) {
                            behind.add(rs.getLong(1));
                        }
                        return null;
                    }).list();
        }
        behind.sort(Comparator.naturalOrder());
        for (List<Long> chunk : chunks(behind, MAX_IDS_PER_STATEMENT)) {
            bindIds(timed(handle.createUpdate("INSERT INTO " + names.outbox()
                    + " (create_time, topic, `key`, value, headers, message_id, attempts, next_attempt_at)"
                    + " SELECT create_time, topic, `key`, value, headers, message_id, attempts, next_attempt_at FROM "
                    + names.outbox() + " WHERE id IN (" + placeholders(chunk.size()) + ") ORDER BY id")), 0, chunk)
                    .execute();
            bindIds(timed(handle.createUpdate(deleteSql(names.outbox(), names.table(), chunk.size()))), 0, chunk)
                    .execute();
        }
    }

    /** True: {@link #parkedKeys()}, and {@link #replay} moves a replayed key's later rows behind the replayed ones. */
    @Override
    protected boolean hasParkedKeys() {
        return true;
    }

    /** {@code SELECT DISTINCT key} over the parked table. */
    @Override
    public java.util.Set<String> parkedKeys() {
        return inTransaction("listing the keys of " + names.parked(), handle ->
                new java.util.HashSet<>(timed(handle.createQuery("SELECT DISTINCT `key` FROM " + names.parked()))
                        .mapTo(String.class).list()));
    }

    /** The filter of {@link #parked(ParkedQuery)} and {@link #parkedCount(ParkedQuery)}; see {@link #bindFilter}. */
    private static final String PARKED_FILTER = " WHERE id > ? AND (? IS NULL OR topic = ?)"
            + " AND (? IS NULL OR `key` = ?) AND (? IS NULL OR LOCATE(?, reason) > 0)"
            + " AND (? IS NULL OR message_id = ?) AND (? IS NULL OR UNIX_TIMESTAMP(parked_at) >= ?)"
            + " AND (? IS NULL OR UNIX_TIMESTAMP(parked_at) < ?)";

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return inTransaction("listing parked rows of " + names.parked(), handle ->
                bindFilter(timed(handle.createQuery("SELECT id, topic, `key`, attempts, reason, UNIX_TIMESTAMP(parked_at),"
                        + " message_id FROM " + names.parked() + PARKED_FILTER + " ORDER BY id LIMIT ?")), query)
                        .bind(13, query.limit()).map((rs, ctx) -> parkedRecord(rs)).list());
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        Objects.requireNonNull(query, "query must not be null");
        return inTransaction("counting parked rows of " + names.parked(), handle ->
                bindFilter(timed(handle.createQuery("SELECT COUNT(*) FROM " + names.parked() + PARKED_FILTER)),
                        query.after(0)).mapTo(Long.class).one());
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        return inTransaction("reading parked row " + id + " of " + names.parked(), handle ->
                timed(handle.createQuery("SELECT id, topic, `key`, attempts, reason, UNIX_TIMESTAMP(parked_at),"
                        + " UNIX_TIMESTAMP(create_time), value, headers, message_id FROM " + names.parked()
                        + " WHERE id = ?"))
                        .bind(0, id).map((rs, ctx) -> {
                            List<Header> headers = List.of();
                            String problem = null;
                            try {
                                headers = HeadersJson.read(rs.getString(9));
                            } catch (IllegalArgumentException e) {
                                problem = e.getMessage();
                            }
                            return new ParkedMessage(parkedRecord(rs), RowReader.instant(rs.getBigDecimal(7)),
                                    rs.getBytes(8), headers, problem);
                        }).findOne());
    }

    @Override
    public int discard(Collection<Long> ids) {
        List<Long> sorted = ids("ids", ids);
        if (sorted.isEmpty()) {
            return 0;
        }
        return inTransaction("discarding " + sorted.size() + " parked rows of " + names.parked(), handle -> {
            int count = 0;
            for (List<Long> chunk : chunks(sorted, MAX_IDS_PER_STATEMENT)) {
                count += bindIds(timed(handle.createUpdate(deleteSql(names.parked(), names.parkedTable(),
                        chunk.size()))), 0, chunk).execute();
            }
            return count;
        });
    }

    private static <S extends SqlStatement<S>> S bindFilter(S statement, ParkedQuery q) {
        byte[] messageId = q.messageId() == null ? null : RowReader.bytes(q.messageId());
        BigDecimal from = q.parkedFrom() == null ? null : unixSeconds(q.parkedFrom());
        BigDecimal before = q.parkedBefore() == null ? null : unixSeconds(q.parkedBefore());
        return statement.bind(0, q.afterId()).bind(1, q.topic()).bind(2, q.topic()).bind(3, q.key())
                .bind(4, q.key()).bind(5, q.reasonContains()).bind(6, q.reasonContains()).bind(7, messageId)
                .bind(8, messageId).bind(9, from).bind(10, from).bind(11, before).bind(12, before);
    }

    /** A parked row's summary from columns 1 to 6 (id to parked_at) and the column message_id. */
    private static ParkedRecord parkedRecord(java.sql.ResultSet rs) throws SQLException {
        return new ParkedRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getString(5),
                RowReader.instant(rs.getBigDecimal(6)), RowReader.uuid(rs.getBytes("message_id")));
    }

    /**
     * The rows in the outbox table, marked or not. Exact up to {@value #EXACT_BACKLOG_LIMIT} rows (it counts the
     * head of the table); above that, the span of ids ({@code MAX(id) - MIN(id) + 1}, read from the ends of the
     * primary key), an upper bound that overcounts by the ids of rows already delivered, parked or rolled back in
     * between. A shard's view: the span of the shard's ids divided by the shard count (the other shards' ids lie
     * in between), an estimate.
     */
    @Override
    public long backlog() {
        return inTransaction("counting the backlog of " + names.outbox(), handle ->
                timed(handle.createQuery(backlogSql)).map((rs, ctx) -> {
                    long counted = rs.getLong(1);
                    if (counted <= EXACT_BACKLOG_LIMIT) {
                        return counted;
                    }
                    return Math.max(counted, rs.getLong(2));
                }).one());
    }

    /** The rows in the parked table, counted exactly (the parked table is meant to stay small). */
    @Override
    public long parkedCount() {
        return inTransaction("counting the rows of " + names.parked(), handle ->
                timed(handle.createQuery(parkedCountSql)).mapTo(Long.class).one());
    }

    /** The {@code create_time} of the row with the lowest id, read from the head of the primary key. */
    @Override
    public Optional<Instant> oldestCreateTime() {
        return inTransaction("reading the head of " + names.outbox(), handle ->
                timed(handle.createQuery(oldestSql)).map((rs, ctx) -> RowReader.instant(rs.getBigDecimal(1)))
                        .findOne());
    }

    // ------------------------------------------------------------------------------------------ internals

    /** Locks the rows of {@code table} with the given ids (ascending); returns the ids that exist. */
    private List<Long> lockIds(Handle handle, String table, List<Long> ids) {
        return bindIds(timed(handle.createQuery("SELECT id FROM " + table + " FORCE INDEX (PRIMARY) WHERE id IN ("
                + placeholders(ids.size()) + ") ORDER BY id FOR UPDATE")), 0, ids).mapTo(Long.class).list();
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
        return "DELETE /*+ INDEX(`" + name + "` PRIMARY) */ /*M! " + table + " */ FROM " + table
                + " /*M! FORCE INDEX (PRIMARY) */ WHERE id IN (" + placeholders(count) + ")";
    }

    /** Binds {@code ids} to the positional parameters from {@code from} on. */
    private static <S extends SqlStatement<S>> S bindIds(S statement, int from, List<Long> ids) {
        int position = from;
        for (Long id : ids) {
            statement.bind(position++, id.longValue());
        }
        return statement;
    }

    private <S extends SqlStatement<S>> S timed(S statement) {
        return statement.setQueryTimeout(queryTimeoutSeconds());
    }

    /**
     * Runs {@code work} in a READ COMMITTED transaction of its own and commits it, on a connection bounded as
     * {@link #withHandle} describes; leaves the connection's auto-commit mode as it found it.
     */
    private <T> T inTransaction(String operation, Work<T> work) {
        return withHandle(operation, handle -> {
            // This class ends its transactions itself, on the connection; Jdbi must not second-guess that on close.
            handle.getConfig(Handles.class).setForceEndTransactions(false);
            Connection connection = handle.getConnection();
            boolean restoreAutoCommit = false;
            boolean committed = false;
            try {
                if (connection.getAutoCommit()) {
                    connection.setAutoCommit(false);
                    restoreAutoCommit = true;
                } else {
                    connection.rollback(); // ends whatever the pool left open, so the next line may set the level
                }
                try (Statement statement = connection.createStatement()) {
                    statement.setQueryTimeout(queryTimeoutSeconds());
                    statement.execute(READ_COMMITTED);
                }
                T result = work.run(handle);
                connection.commit();
                committed = true;
                return result;
            } finally {
                endTransaction(connection, committed, restoreAutoCommit);
            }
        });
    }

    private void endTransaction(Connection connection, boolean committed, boolean restoreAutoCommit) {
        try {
            if (!committed) {
                connection.rollback();
            }
            if (restoreAutoCommit) {
                connection.setAutoCommit(true);
            }
        } catch (SQLException | RuntimeException e) {
            // A broken connection: the server rolls back whatever was open; the pool discards the connection.
            log.debug("Could not end a transaction cleanly", e);
        }
    }

    /** {@code reason}, cut to {@value #MAX_REASON_LENGTH} characters, with what utf8mb4 cannot store replaced. */
    private static String storable(String reason) {
        String text = reason.length() > MAX_REASON_LENGTH ? reason.substring(0, MAX_REASON_LENGTH) + "…" : reason;
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                out.append(c).append(text.charAt(++i));
            } else {
                out.append(Character.isSurrogate(c) ? '\uFFFD' : c); // utf8mb4 cannot store a lone surrogate
            }
        }
        return out.toString();
    }

    /** {@code ids} in consecutive pieces of at most {@code size}; none for no ids. */
    private static List<List<Long>> chunks(List<Long> ids, int size) {
        if (ids.isEmpty()) {
            return List.of();
        }
        if (ids.size() <= size) {
            return List.of(ids);
        }
        List<List<Long>> chunks = new ArrayList<>();
        for (int from = 0; from < ids.size(); from += size) {
            chunks.add(ids.subList(from, Math.min(ids.size(), from + size)));
        }
        return chunks;
    }

    private static String placeholders(int count) {
        StringBuilder out = new StringBuilder(count * 3);
        for (int i = 0; i < count; i++) {
            out.append(i == 0 ? "?" : ", ?");
        }
        return out.toString();
    }

    /** The statements of {@code script}: comment lines dropped, split at {@code ;} ending a line. */
    static List<String> statements(String script) {
        StringBuilder current = new StringBuilder();
        List<String> statements = new ArrayList<>();
        for (String line : script.split("\n")) {
            String trimmed = line.strip();
            if (trimmed.startsWith("--") || trimmed.isEmpty()) {
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                String sql = current.toString().strip();
                statements.add(sql.substring(0, sql.length() - 1));
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        return statements;
    }

    /**
     * Configures a {@link MySqlStore}: {@link #schema}, {@link #table}, {@link #statementTimeout},
     * {@link #maxKeyLength}, whose default here is the schema's column width, {@value MySqlStore#DEFAULT_MAX_KEY_LENGTH}
     * (set it lower to what your consumers accept, or higher only after widening the {@code key} column), and
     * {@link #lateCommitWindow}. Not thread-safe; {@link #build()} returns an immutable store. Every setter rejects a
     * bad value at once, naming it.
     */
    public static final class Builder extends SqlStore.Builder<Builder, MySqlStore> {
        private Duration lateCommitWindow = DEFAULT_LATE_COMMIT_WINDOW;

        private Builder(Jdbi jdbi) {
            super(jdbi, MySqlDialect.DIALECT, MySqlStore::new);
        }

        /**
         * How long the cursor harvest rechecks an id it passed without seeing its row (a writer transaction that took
         * the id had not committed yet, or rolled back) before it takes the id to have rolled back; default 60 s, at
         * least 1 ms, at most a day. Set it above the longest transaction in which your application writes to the
         * outbox: a row committed later than this is published only by the harvest's next read from the head of the
         * table ({@code DispatcherConfig.rescanInterval}), late, and possibly after a later row of its key. A longer
         * window costs a little: the ids of rolled-back transactions are read again, by primary key, for that long.
         * See the store's "Read" section.
         *
         * @throws IllegalArgumentException naming the bad value
         */
        public Builder lateCommitWindow(Duration lateCommitWindow) {
            Objects.requireNonNull(lateCommitWindow, "lateCommitWindow must not be null");
            if (lateCommitWindow.compareTo(Duration.ofMillis(1)) < 0) {
                throw new IllegalArgumentException("lateCommitWindow must be at least 1 ms: " + lateCommitWindow);
            }
            if (lateCommitWindow.compareTo(MAX_LATE_COMMIT_WINDOW) > 0) {
                throw new IllegalArgumentException("lateCommitWindow must be at most " + MAX_LATE_COMMIT_WINDOW + ": "
                        + lateCommitWindow);
            }
            this.lateCommitWindow = lateCommitWindow;
            return this;
        }
    }
}
