package dev.outbox.store.postgres;

import dev.outbox.spi.CommitLog;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.IdRanges;
import dev.outbox.store.sql.SqlChecks;
import dev.outbox.store.sql.SqlLeaseStatements;
import dev.outbox.store.sql.SqlIdempotency;
import dev.outbox.store.sql.SqlKeySequence;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlStore;
import org.jdbi.v3.core.Jdbi;

import javax.sql.DataSource;
import java.sql.Statement;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

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
 * back, so gaps stay open and are reread until it ends. A writer cannot escape the rule by setting the id itself
 * (even one taken with {@code nextval}): the table's id guard refuses such an {@code INSERT} (see
 * {@link #schemaSql()}).
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
 * leader streams the committed messages in commit order from a logical replication slot ({@code PgOutputStream}):
 * the store is then a {@link CommitLog}, which the dispatcher harvests with its own stream harvest, confirming the
 * slot as far as every earlier message is finished. A parked message goes to the parked table (under its WAL
 * position as id) and {@link #replay} re-emits parked messages. The table is still created (an operator may switch
 * back), and the parked table is shared by both harvests.
 *
 * <h2>Rooms</h2>
 * This class wires the store: its statements are data ({@code PostgresStatements}), the shared work is
 * {@link SqlStore}'s; the mark and the read with its snapshot horizon are {@code PostgresHarvest}, the DDL
 * {@code PostgresSchema}, the commit notifications {@code PgNotifications}, the WAL harvest {@code PgWalOutbox}, and
 * what the WAL harvest changes in the store's own methods (its slot and DDL, its capabilities) the package-private
 * layer this class extends, {@code PostgresWalStore}.
 *
 * <p>Immutable and thread-safe.
 */
public final class PostgresStore extends PostgresWalStore {
    /** The in-place upgrade of tables created before message ids. */
    static final String UPGRADE_RESOURCE = "dev/outbox/store/postgres/upgrade-message-id.sql";
    /** The in-place upgrade of tables created before per-key retries (the next_attempt_at column). */
    static final String UPGRADE_NEXT_ATTEMPT_RESOURCE = "dev/outbox/store/postgres/upgrade-next-attempt.sql";
    /** The message-id function's name, in the outbox's schema. */
    static final String UUIDV7_FUNCTION = "outbox_uuidv7";
    /** The trigger function that refuses an id set by a writer (schema.sql), one per schema. */
    static final String ID_GUARD_FUNCTION = "outbox_id_guard";

    private final Builder builder;
    /** The whole outbox, for the view of one shard; null for the whole outbox itself. */
    private final PostgresStore whole;
    private final PostgresStatements statements;
    private final PostgresHarvest harvest;
    private final PostgresPublisher publisher;
    /** The scheduled messages' release, or null when scheduling is off ({@link Builder#scheduling}). */
    private final SqlScheduling scheduling;
    /** The commit notifications, or null when they are off or the WAL is harvested. */
    private final PgNotifications notifications;

    private PostgresStore(Builder builder) {
        this(builder, -1, null);
    }

    private PostgresStore(Builder builder, int shard, PostgresStore whole) {
        super(builder, builder.wal, shard);
        this.builder = builder;
        this.whole = whole;
        this.statements = PostgresStatements.of(sqlTable(), PostgresSchema.uuidv7(names));
        this.harvest = new PostgresHarvest(transactions(), statements, maxKeyLength(), names.outbox());
        PgWalOutbox wal = wal();
        this.scheduling = whole != null ? whole.scheduling : scheduling()
                ? PgScheduling.release(transactions(), names, statements.settings(), SqlScheduling.holdsKey(builder))
                : null;
        this.notifications = whole != null ? whole.notifications : wal == null && builder.commitNotifications
                ? new PgNotifications(jdbi(), names, shardCount() > 1) : null;
        this.publisher = whole != null ? whole.publisher : new PostgresPublisher(names, maxKeyLength(),
                queryTimeoutSeconds(), decorators(), wal == null ? null : wal.prefix(),
                notifications == null ? null : notifications.channel(), keySequence()
                ? SqlKeySequence.on(new PgKeyCounter(SqlKeySequence.table(names), queryTimeoutSeconds()))
                : SqlKeySequence.off(), scheduling);
        if (whole == null) {
            wakeOnCommitted(publisher);
        }
        makeViews();
    }

    @Override
    protected ScheduledMessages scheduledMessages() {
        return scheduling;
    }

    /**
     * Starts a builder for a Postgres store on the connections of {@code jdbi}.
     *
     * @param jdbi the connections the store reads and writes through; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code jdbi} is null
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    /**
     * Starts a builder for a Postgres store on the connections of {@code dataSource}; use a pooling one.
     *
     * @param dataSource the database the store connects to; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code dataSource} is null
     */
    public static Builder builder(DataSource dataSource) {
        return builder(jdbi(dataSource));
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view adds {@code shard = <index>} to the conditions of its mark, read, backlog and oldest create time
     * (served by the index on {@code (shard, id)}).
     */
    @Override
    protected SqlStore view(int index) {
        return new PostgresStore(builder, index, this);
    }

    /** The lease table's statements for Postgres (leader election in the database). */
    @Override
    protected Optional<SqlLeaseStatements> leaseStatements() {
        return Optional.of(PostgresStatements.lease(names));
    }

    @Override
    public PostgresPublisher publisher() {
        return publisher;
    }

    // ------------------------------------------------------------------------------------------ schema

    /**
     * Both tables are created in one transaction, under an advisory lock that serializes concurrent creators. Tables
     * that predate message ids are upgraded in place ({@link #upgradeSql()}) in the same transaction: each statement
     * only changes the catalog, so writers and dispatchers carry on. The DDL itself gives a table of an earlier version
     * the id default that takes the transaction id first (its {@code DO} block), once: only while the column still
     * has another default.
     */
    @Override
    protected void createTables(String ddl) {
        transactions().inTransaction("creating the outbox schema for " + names.outbox(), statements.settings(),
                handle -> {
                    PostgresSchema.apply(handle, ddl, names, this::render);
                    if (wal() != null) {
                        try (Statement statement = handle.getConnection().createStatement()) {
                            wal().createSchema(statement);
                        }
                    }
                    return null;
                });
        if (wal() != null) {
            wal().createSlot(); // not in the transaction above: a slot cannot be created by a transaction that wrote
        }
    }

    /** Fills in the message-id function, {@code ${uuidv7}}, the id guard and a sharded outbox's shard column. */
    @Override
    protected String fillIn(String sql) {
        return PostgresSchema.fillIn(sql, names, shardCount());
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
        return PostgresSchema.reshardSql(names, fromShards, shardCount());
    }

    /**
     * The in-place upgrade of tables created before message ids (the {@code upgrade-message-id.sql} resource of this
     * package), with the configured names filled in; run it after {@link #schemaSql()}'s function exists. It only
     * changes the catalog, so it neither rewrites nor blocks rows for longer than an instant; {@link #createSchema()}
     * runs it when the {@code message_id} column is missing.
     *
     * @return the upgrade script for this store's tables; never null
     */
    public String upgradeSql() {
        return render(UPGRADE_RESOURCE);
    }

    // ------------------------------------------------------------------------------------------ the harvest

    @Override
    protected MarkResult mark(UUID leaderId, int limit, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        SqlChecks.limit(limit);
        if (wal() != null) {
            throw new UnsupportedOperationException("the WAL harvest of " + names.outbox() + " has no mark: harvest it"
                    + " with DispatcherConfig.Harvest.CURSOR (the default)");
        }
        requireShards();
        return harvest.mark(leaderId, limit, fence, "marking up to " + limit + " rows of " + names.outbox()
                + shardName() + " for leader " + leaderId);
    }

    @Override
    protected ReadResult readRows(long after, List<IdRange> ranges, int limit) {
        return harvest.read(after, ranges, limit, "reading up to " + limit + " rows of " + names.outbox()
                + shardName() + " after id " + after);
    }

    /** The read statement, for tests that compare plans. */
    String readSql() {
        return statements.read();
    }

    /** The plan Postgres chooses for {@link #read} right now, under the same settings; for tests and diagnosis. */
    String explainRead(long after, List<IdRange> recheck, int limit) {
        return harvest.explainRead(after, IdRanges.merged(recheck, after), limit);
    }

    /** The mark statement, for tests that compare plans. */
    String markSql() {
        return statements.mark();
    }

    /** The plan Postgres chooses for {@link #mark} right now, under the same settings; for tests and diagnosis. */
    String explainMark(UUID leaderId, int limit) {
        return harvest.explainMark(leaderId, limit);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The table harvest: after {@code LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE} (which waits for the table's
     * writer transactions and keeps new ones from taking an id until it commits), one statement moves the parked
     * rows back at the tail and each replayed key's later rows behind them. The WAL harvest emits the parked
     * messages again.
     */
    @Override
    public int replay(Collection<Long> ids) {
        Long[] array = SqlChecks.ids("ids", ids).toArray(new Long[0]);
        if (array.length == 0) {
            return 0;
        }
        int replayed = wal() != null ? wal().replay(array)
                : transactions().inTransaction("replaying " + array.length + " parked rows into " + names.outbox(),
                        statements.settings(), handle -> {
                            handle.execute(statements.replayLock());
                            return handle.createQuery(statements.replay()).bind(0, PostgresHarvest.bigints(array))
                                    .mapTo(Integer.class).one();
                        });
        log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        return replayed;
    }

    // ------------------------------------------------------------------------------------------ notifications

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
            return notifications != null ? notifications.watchShard(whole.localCommitWatch(wakeUp), wakeUp)
                    : whole.watchCommits(wakeUp);
        }
        if (wal() != null) {
            return null;
        }
        return notifications == null ? localCommitWatch(wakeUp) : notifications.watch(localCommitWatch(wakeUp), wakeUp);
    }

    /**
     * The channel this outbox's commits are notified on ({@code LISTEN}/{@code pg_notify}): the table's name,
     * schema-qualified if a schema is set; empty when commit notifications are off or the WAL is harvested.
     *
     * @return the channel's name, or empty; never null
     */
    public Optional<String> notifyChannel() {
        return Optional.ofNullable(notifications).map(PgNotifications::channel);
    }

    /**
     * The DDL of an optional statement-level trigger that notifies this outbox's channel after every
     * {@code INSERT} into its table, whoever writes it: for plain-SQL writers in any language, so that their rows
     * wake the leader too (this store's own publisher notifies without it; with both, Postgres folds the two
     * notifications of a transaction into one). Idempotent (Postgres 14 or later). Not applied by
     * {@link #createSchema()}.
     *
     * @return the trigger's DDL, names filled in
     * @throws IllegalStateException if commit notifications are off or the WAL is harvested
     */
    public String notifyTriggerSql() {
        if (notifications == null) {
            throw new IllegalStateException("notifyTriggerSql needs commit notifications on a table harvest"
                    + " (PostgresStore.Builder.commitNotifications), and " + names.outbox() + " has none");
        }
        return notifications.triggerSql();
    }

    /**
     * Configures a {@link PostgresStore}: {@link #schema}, {@link #table}, {@link #statementTimeout} and
     * {@link #maxKeyLength}, whose default here is no limit beyond Postgres' own. Not thread-safe; {@link #build()}
     * returns an immutable store. Every setter rejects a bad value at once, naming it.
     */
    public static final class Builder extends SqlStore.Builder<Builder, PostgresStore> {
        private WalHarvest wal;
        private boolean commitNotifications = true;

        private Builder(Jdbi jdbi) {
            super(jdbi, PostgresDialect.DIALECT, PostgresStore::new);
        }

        /**
         * Whether the leader is woken by Postgres' {@code LISTEN/NOTIFY} when rows are committed, so that an idle
         * outbox publishes within milliseconds instead of at the leader's next poll (up to {@code pollInterval}).
         * With it on, this store's publisher calls {@code pg_notify} in the writer's transaction (Postgres delivers
         * it at commit, one per transaction), and the leader holds one connection of the store's pool for as long
         * as it leads, listening. Polling stays the safety net: a notification lost with a connection delays a row,
         * never loses it. Plain-SQL writers notify through {@link PostgresStore#notifyTriggerSql()}. Ignored by the
         * WAL harvest, which is pushed to anyway. Default: on.
         *
         * @param on true to listen for commit notifications, false to rely on polling alone
         * @return this builder
         */
        public Builder commitNotifications(boolean on) {
            this.commitNotifications = on;
            return this;
        }

        /**
         * Harvests the write-ahead log instead of the table: the publisher emits each message as a transactional
         * logical message, and the leading dispatcher streams them from a replication slot (see
         * {@link WalHarvest}). Default: none, the table is harvested.
         *
         * @param wal the WAL harvest's settings; not null
         * @return this builder
         * @throws NullPointerException if {@code wal} is null
         */

        public Builder walHarvest(WalHarvest wal) {
            this.wal = Objects.requireNonNull(wal, "wal must not be null");
            return this;
        }
    }

    /** Postgres' idempotency statements: one claim statement per publish call ({@code PgIdempotency}). */
    @Override
    protected SqlIdempotency.Statements idempotencyStatements(String table) {
        return PgIdempotency.statements(table, queryTimeoutSeconds());
    }
}
