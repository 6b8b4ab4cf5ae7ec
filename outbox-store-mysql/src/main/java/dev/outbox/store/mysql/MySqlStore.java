package dev.outbox.store.mysql;

import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.LateCommitWindow;
import dev.outbox.store.sql.SqlLeaseStatements;
import dev.outbox.store.sql.SqlChecks;
import dev.outbox.store.sql.SqlIdempotency;
import dev.outbox.store.sql.SqlKeySequence;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlStore;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.Optional;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
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
 * <h2>Rooms</h2>
 * This class wires the store: its statements are data ({@code MySqlStatements}), the shared work (purge, failure
 * records, park, the parked area, the gauges, shards and fencing) is {@link SqlStore}'s; the mark and the read with
 * its time window are {@code MySqlHarvest}, the replay {@code MySqlReplay}, the DDL {@code MySqlSchema}.
 *
 * <p>Immutable and thread-safe.
 */
public final class MySqlStore extends SqlStore {
    /** The default and the schema's longest key, in code points: {@code VARCHAR(1024)}. */
    public static final int DEFAULT_MAX_KEY_LENGTH = MySqlDialect.DEFAULT_MAX_KEY_LENGTH;
    /** The most ids bound into one {@code IN (...)} list; larger batches take several statements. */
    public static final int MAX_IDS_PER_STATEMENT = MySqlDialect.MAX_IDS_PER_STATEMENT;
    /** The default {@link Builder#lateCommitWindow late-commit window}. */
    public static final Duration DEFAULT_LATE_COMMIT_WINDOW = LateCommitWindow.DEFAULT;
    /** The longest {@link Builder#lateCommitWindow late-commit window}. */
    public static final Duration MAX_LATE_COMMIT_WINDOW = LateCommitWindow.MAX;
    /**
     * The most recheck ranges one read statement carries (two placeholders each); a read given more takes several
     * statements (see the class Javadoc). MySQL's range optimizer keeps this many ranges well inside its default
     * {@code range_optimizer_max_mem_size}.
     */
    static final int MAX_RECHECK_RANGES_PER_STATEMENT = 500;
    /** The {@code leader_id} of a row nobody has marked: 16 zero bytes, the nil UUID. */
    static final String UNMARKED = "X'00000000000000000000000000000000'";
    /** The in-place upgrade of tables created before message ids. */
    static final String UPGRADE_RESOURCE = "dev/outbox/store/mysql/upgrade-message-id.sql";
    /** The in-place upgrade of tables created before per-key retries (the next_attempt_at column). */
    static final String UPGRADE_NEXT_ATTEMPT_RESOURCE = "dev/outbox/store/mysql/upgrade-next-attempt.sql";
    /** The trigger that refuses an id set by a writer. */
    static final String ID_GUARD_RESOURCE = "dev/outbox/store/mysql/id-guard.sql";
    /**
     * The SQL expression the DDL uses as the {@code message_id} column default: a version 7 UUID as
     * {@code BINARY(16)} (the schema's {@code ${uuidv7}}), for migrations that ship the DDL outside this class: 12 hex
     * digits of Unix milliseconds, the version digit 7, 12 random bits, the variant (10) and 62 random bits. (MariaDB
     * has {@code RANDOM_BYTES} since 10.10.)
     */
    public static final String UUIDV7_EXPRESSION = "UNHEX(CONCAT(LPAD(HEX(FLOOR(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000)),"
            + " 12, '0'), '7', SUBSTR(HEX(RANDOM_BYTES(2)), 2, 3), HEX(128 | (ASCII(RANDOM_BYTES(1)) & 63)),"
            + " HEX(RANDOM_BYTES(7))))";

    private final Builder builder;
    /** The whole outbox, for the view of one shard; null for the whole outbox itself. */
    private final MySqlStore whole;
    private final MySqlStatements statements;
    private final MySqlHarvest harvest;
    private final MySqlReplay replay;
    private final MySqlPublisher publisher;
    private final LateCommitWindow lateCommitWindow;

    /** The scheduled messages' release, or null when scheduling is off ({@link Builder#scheduling}). */
    private final SqlScheduling scheduling;

    private MySqlStore(Builder builder) {
        this(builder, -1, null);
    }

    private MySqlStore(Builder builder, int shard, MySqlStore whole) {
        super(builder, shard, MySqlStatements::shared);
        this.builder = builder;
        this.whole = whole;
        this.lateCommitWindow = LateCommitWindow.of(builder.lateCommitWindow);
        this.statements = MySqlStatements.of(sqlTable());
        this.harvest = new MySqlHarvest(transactions(), statements, sqlStatements().fenceLock(),
                maxKeyLength(), names.outbox(), lateCommitWindow);
        this.replay = new MySqlReplay(transactions(), statements, names.outbox());
        this.scheduling = whole != null ? whole.scheduling : scheduling()
                ? MySqlScheduling.release(transactions(), names, SqlScheduling.holdsKey(builder)) : null;
        this.publisher = whole != null ? whole.publisher : new MySqlPublisher(names, maxKeyLength(), decorators(),
                keySequence()
                        ? SqlKeySequence.on(SqlKeySequence.perKey(new MySqlKeyCounter(SqlKeySequence.table(names))))
                        : SqlKeySequence.off(), scheduling);
        if (whole == null) {
            wakeOnCommitted(publisher); // MySQL cannot notify: a publisher in this process can (Publisher.committed)
        }
        makeViews();
    }

    /**
     * Starts a builder for a MySQL or MariaDB store on the connections of {@code jdbi}, or, with the other entry
     * point, of a pooling data source.
     *
     * @param jdbi the connections the store reads and writes through; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code jdbi} is null
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    /**
     * Starts a builder for a MySQL or MariaDB store on the connections of {@code dataSource}; use a pooling one.
     * See {@link #builder(Jdbi)}.
     *
     * @param dataSource the database the store connects to; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code dataSource} is null
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(jdbi(dataSource));
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view adds {@code shard = <index>} to the conditions of its mark, read, backlog and oldest create time
     * and walks the {@code (shard, id)} index.
     */
    @Override
    protected ScheduledMessages scheduledMessages() {
        return scheduling;
    }

    @Override
    protected SqlStore view(int index) {
        return new MySqlStore(builder, index, this);
    }

    /** A shard's view is woken by the whole outbox's publishers: a commit to any shard wakes every shard. */
    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        return whole != null ? whole.watchCommits(wakeUp) : super.watchCommits(wakeUp);
    }

    /** The lease table's statements for MySQL and MariaDB (leader election in the database). */
    @Override
    protected Optional<SqlLeaseStatements> leaseStatements() {
        return Optional.of(MySqlStatements.lease(names));
    }

    @Override
    public MySqlPublisher publisher() {
        return publisher;
    }

    // ------------------------------------------------------------------------------------------ schema

    /**
     * DDL commits implicitly in MySQL, so the two tables are created one after the other, each atomically; the DDL
     * is split into statements at {@code ;} ending a line. A named lock serializes concurrent creators.
     */
    @Override
    protected void createTables(String ddl) {
        MySqlSchema.apply(transactions(), names, ddl, this::render, idGuardSql());
    }

    /** Fills in the message-id expression, {@code ${uuidv7}}, the id guard's name and a sharded outbox's shard column. */
    @Override
    protected String fillIn(String sql) {
        return MySqlSchema.fillIn(sql, names, shardCount());
    }

    /**
     * {@inheritDoc}
     *
     * <p>MySQL and MariaDB: drops the {@code shard} column and its index if {@code fromShards} is more than 1, adds
     * them back for this count (one {@code ALTER TABLE}, which rebuilds the table), and widens the leader table's id
     * to {@code SMALLINT} (for 1 shard, deletes the other shards' epoch rows). Each statement commits on its own (DDL
     * is not transactional here): run it again if it stops half-way.
     */
    @Override
    public String reshardSql(int fromShards) {
        return MySqlSchema.reshardSql(names, fromShards, shardCount());
    }

    /**
     * The in-place upgrade of tables created before message ids (the {@code upgrade-message-id.sql} resource of this
     * package), names filled in: statements separated by {@code ;} at the end of a line. {@link #createSchema()} runs
     * it when the {@code message_id} column is missing.
     *
     * @return the upgrade script for this store's tables; never null
     */
    public String upgradeSql() {
        return render(UPGRADE_RESOURCE);
    }

    /**
     * The trigger that refuses an {@code INSERT} setting the outbox table's id (the {@code id-guard.sql} resource of
     * this package), names filled in: one compound statement, to run after {@link #schemaSql()}; with the
     * {@code mysql} client, set another delimiter around it. {@link #createSchema()} creates it unless it exists; a
     * user that may not create triggers (binary logging on, without SUPER or {@code log_bin_trust_function_creators})
     * gets the tables without it and a warning saying so.
     *
     * @return the trigger's DDL for this store's table; never null
     */
    public String idGuardSql() {
        return MySqlSchema.withoutComments(render(ID_GUARD_RESOURCE));
    }

    // ------------------------------------------------------------------------------------------ the harvest

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
        if (leaderId.equals(MySqlHarvest.NIL)) {
            throw new IllegalArgumentException("leaderId must not be the nil UUID " + MySqlHarvest.NIL
                    + ": in leader_id it stands for an unmarked row");
        }
        SqlChecks.limit(limit);
        requireShards();
        return harvest.mark(leaderId, limit, fence, whileLocked, "marking up to " + limit + " rows of "
                + names.outbox() + shardName() + " for leader " + leaderId);
    }

    /**
     * One consistent, non-locking read of the primary key (several for more than
     * {@value #MAX_RECHECK_RANGES_PER_STATEMENT} recheck ranges); the ordinals of the result are milliseconds of a
     * monotonic clock, {@code gapToken} exceeding {@code horizon} by the {@link Builder#lateCommitWindow late-commit
     * window} and the time the read took. See the class Javadoc's "Read" section, and its limitation for writer
     * transactions longer than the window.
     */
    @Override
    protected ReadResult readRows(long after, List<IdRange> ranges, int limit) {
        return harvest.read(after, ranges, limit, "reading up to " + limit + " rows of " + names.outbox()
                + shardName() + " above id " + after
                + (ranges.isEmpty() ? "" : " and in " + ranges.size() + " recheck range(s)"));
    }

    /**
     * How long a read's gap is rechecked before it is taken to have rolled back.
     *
     * @return the late-commit window set on the builder (default {@link #DEFAULT_LATE_COMMIT_WINDOW}, 60 s), between
     *         1 ms and a day
     */
    public Duration lateCommitWindow() {
        return lateCommitWindow.window();
    }

    /** The read statement for {@code ranges} recheck ranges, with {@code id > ?} if {@code head}; for tests. */
    String readSql(boolean head, int ranges) {
        return statements.readSql(head, ranges);
    }

    /** The mark's first statement (its candidates), for tests that check plans. */
    String candidatesSql() {
        return statements.candidates();
    }

    /**
     * {@inheritDoc}
     *
     * <p>In one transaction, as {@code MySqlReplay} describes: the parked rows go back at the tail in parked id
     * order, then each replayed key's later outbox rows are moved behind them.
     */
    @Override
    public int replay(Collection<Long> ids) {
        List<Long> sorted = SqlChecks.ids("ids", ids);
        if (sorted.isEmpty()) {
            return 0;
        }
        int replayed = replay.replay(sorted);
        if (replayed > 0) {
            log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        }
        return replayed;
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
         * @param lateCommitWindow the window; not null
         * @return this builder
         * @throws NullPointerException if {@code lateCommitWindow} is null
         * @throws IllegalArgumentException naming the bad value if it is below 1 ms or above a day
         */

        public Builder lateCommitWindow(Duration lateCommitWindow) {
            this.lateCommitWindow = LateCommitWindow.check(lateCommitWindow);
            return this;
        }
    }

    /** MySQL's and MariaDB's idempotency statements: one claim per key ({@code MySqlIdempotency}). */
    @Override
    protected SqlIdempotency.Statements idempotencyStatements(String table) {
        return MySqlIdempotency.statements(table);
    }
}
