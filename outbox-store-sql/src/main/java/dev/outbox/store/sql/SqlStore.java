package dev.outbox.store.sql;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.OutboxShards;
import dev.outbox.spi.CommitWatchers;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.IdempotencyKeys;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;

/**
 * The SQL store, run once for every database, and the face of its rooms: shards ({@code SqlShards}), storage
 * fencing ({@link SqlFencing}), the batch writes ({@code SqlBatchWrites}), the parked area ({@code ParkedRows}), the
 * gauges ({@code SqlGauges}), the schema's scripts ({@code SqlSchemaScripts}), and how a call runs its transaction
 * ({@link SqlTransactions}). Each database supplies its statements as data ({@link SqlStatements},
 * {@link SqlDialect}) and what truly differs: the mark ({@link #mark(UUID, int, long)}), the cursor read and its
 * late-commit rule ({@link #readRows}), the replay, and how its DDL is applied ({@link #createTables},
 * {@link #reshardSql}).
 *
 * <p>For store implementations, not for applications. Subclasses are immutable and thread-safe.
 */
public abstract class SqlStore implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding,
        ParkedRecords, ParkedKeys, Gauges, IdempotencyKeys {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "outbox";
    /** The default statement timeout. */
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);
    /** Up to this many rows {@link #backlog()} counts exactly; above, it estimates. */
    public static final long EXACT_BACKLOG_LIMIT = 100_000;
    /** An unfenced write: no epoch is checked ({@link SqlFencing#UNFENCED}). */
    protected static final long UNFENCED = SqlFencing.UNFENCED;

    /** The store's logger, named after the concrete store. */
    protected final Logger log = LoggerFactory.getLogger(getClass());
    /** The validated, quoted table names. */
    protected final SqlTableNames names;
    /** The wake-ups of this process's dispatchers that watch commits locally ({@link #localCommitWatch}). */
    private final CommitWatchers localWatchers = new CommitWatchers();
    private final SqlDialect dialect;
    private final SqlTransactions tx;
    private final SqlTable table;
    private final SqlStatements sql;
    private final ParkedRows parkedRows;
    private final SqlGauges gauges;
    private final SqlBatchWrites writes;
    private final SqlShards shardState;
    private final SqlSchemaScripts schema;
    private final Duration statementTimeout;
    private final int maxKeyLength;
    private final MessageDecorators decorators;
    private final boolean fencing;
    private final boolean keySequence;
    private final SqlIdempotency idempotency;
    private final boolean scheduling;
    private final int shardCount;
    /** The shard this store object is the view of ({@link #shard}), or -1 for the whole outbox. */
    private final int shardIndex;

    /**
     * Takes the builder's settings for the whole outbox ({@code shardIndex} -1) or for the view of one of its shards
     * ({@link #shard}), and the statements that {@code statements} writes for that table and view.
     *
     * @param builder    the settings; read here, so later changes to the builder do not reach this store
     * @param shardIndex -1 for the whole outbox, else the shard this store is the view of, from 0 to the builder's
     *                   shard count - 1
     * @param statements writes the dialect's statements for a table (called once, here); must not return null
     * @throws IllegalArgumentException if {@code shardIndex} is 0 or more but not below the shard count
     * @throws NullPointerException     if {@code statements} returns null
     */
    protected SqlStore(SqlStoreBuilder<?, ?> builder, int shardIndex, Function<SqlTable, SqlStatements> statements) {
        this.shardCount = builder.shards;
        this.shardIndex = shardIndex < 0 ? -1 : OutboxShards.checkIndex(shardIndex, builder.shards);
        this.dialect = builder.dialect;
        this.names = dialect.tableNames().names(builder.schema, builder.table);
        this.statementTimeout = builder.statementTimeout;
        this.tx = new SqlTransactions(builder.jdbi, dialect.errors(), statementTimeout, dialect.queryTimeouts());
        this.maxKeyLength = builder.maxKeyLength;
        this.decorators = MessageDecorators.of(builder.decorators);
        this.fencing = builder.fencing;
        this.keySequence = builder.keySequence;
        if (keySequence) {
            SqlKeySequence.checkTableLength(dialect.tableNames(), names.table());
        }
        this.idempotency = SqlIdempotencyOption.of(builder, this, names);
        this.scheduling = builder.scheduling;
        if (scheduling) {
            SqlScheduling.checkTableLength(dialect.tableNames(), names.table());
        }
        this.table = new SqlTable(names, this.shardIndex, shardCount, statementTimeout);
        this.sql = Objects.requireNonNull(statements.apply(table), "statements");
        this.parkedRows = new ParkedRows(tx, sql, dialect.columns(), dialect.ids(), names.parked());
        this.gauges = new SqlGauges(tx, sql, dialect.columns(), names.outbox());
        this.writes = new SqlBatchWrites(tx, sql, dialect, names.outbox());
        this.shardState = new SqlShards(tx, sql, names.outbox(), shardCount);
        List<SqlSchemaScripts.SideTable> sideTables = new ArrayList<>();
        if (keySequence) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlKeySequence.RESOURCE, SqlKeySequence.table(names)));
        }
        if (idempotency.isOn()) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlIdempotency.RESOURCE, SqlIdempotency.table(names)));
        }
        if (scheduling) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlScheduling.RESOURCE, SqlScheduling.table(names)));
        }
        this.schema = new SqlSchemaScripts(getClass(), table, dialect.schemaResource(), sideTables, shardState, log,
                new SqlSchemaScripts.Ddl(this::fillIn, this::createTables, this::reshardSql));
    }

    // ------------------------------------------------------------------------------------------ shards

    /**
     * The outbox's shard count ({@link Builder#shards}) for the whole store; 1 for the view of one shard (which is,
     * for the dispatcher that harvests it, an outbox of its own).
     */
    @Override
    public int shards() {
        return shardIndex < 0 ? shardCount : 1;
    }

    /**
     * The outbox's shard count as configured ({@link Builder#shards}), for the whole store and its views alike.
     *
     * @return the count, from 1 to {@link OutboxShards#MAX_SHARDS}
     */
    public final int shardCount() {
        return shardCount;
    }

    /** {@return the shard this store is the view of, from 0, or -1 for the whole outbox} */
    protected final int shardIndex() {
        return shardIndex;
    }

    /**
     * {@inheritDoc}
     *
     * <p>The view is a store of the same class over the same table ({@link #view}) whose mark, read, backlog and
     * oldest create time see only the shard's rows, and whose epoch is the leader table's row {@code index + 1}.
     * Each view is made once.
     */
    @Override
    public final Store shard(int index) {
        OutboxShards.checkIndex(index, shards());
        return shards() == 1 ? this : shardState.view(index, this::view);
    }

    /**
     * A new view of shard {@code index} of this whole outbox ({@link #shard}); a store that can be sharded overrides
     * it. This default is for a store with one shard, which is its own view: it is never called.
     *
     * @param index the shard, from 0 to {@link #shardCount()} - 1, checked by the caller
     * @return a new store of the subclass for that shard's view
     * @throws UnsupportedOperationException always
     */
    protected SqlStore view(int index) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " has no shard views");
    }

    /**
     * Makes the views of a sharded whole outbox's shards now ({@link #view}), for a store whose builder may change
     * after {@code build()}: called last by the subclass's constructor. Nothing for a view or an unsharded store.
     */
    protected final void makeViews() {
        for (int i = 0; shardIndex < 0 && shardCount > 1 && i < shardCount; i++) {
            shard(i);
        }
    }

    /**
     * {@code " (shard <i>)"} for a shard's view, for messages; empty for the whole outbox.
     *
     * @return the suffix, never null
     */
    protected final String shardName() {
        return shardIndex < 0 ? "" : " (shard " + shardIndex + ")";
    }

    /**
     * Checks that the outbox table is made for this store's shard count: a table without the generated
     * {@code shard} column has 1 shard, one with it has the count its expression takes the key's hash modulo. Runs
     * once per store object (the first call that finds them equal is remembered); {@link #createSchema()} and the
     * first {@code acquireEpoch}, {@code mark} and {@code read} call it.
     *
     * @throws StoreException (not retriable) naming both counts if they differ, or the expression if the count
     *                        cannot be read from it
     */
    public final void checkShards() {
        shardState.check();
    }

    /** Runs {@link #checkShards()} before a harvest call. */
    protected final void requireShards() {
        shardState.check();
    }

    // ------------------------------------------------------------------------------------------ storage fencing

    /**
     * Whether {@link Builder#fencing storage fencing} is on: the store then has {@link StorageFencing}.
     *
     * @return the builder's setting; a subclass that cannot fence (the WAL harvest) returns false
     */
    protected boolean fencing() {
        return fencing;
    }

    /**
     * Whether the store marks rows ({@link MarkHarvest}); true unless a subclass harvests otherwise.
     *
     * @return true by default
     */
    protected boolean hasMark() {
        return true;
    }

    /**
     * Whether the store lists its parked keys and its replay moves a replayed key's later rows behind the replayed
     * ones ({@link ParkedKeys}); true unless a subclass cannot.
     *
     * @return true by default
     */
    protected boolean hasParkedKeys() {
        return true;
    }

    /**
     * The release of due scheduled messages, for a store built with {@link Builder#scheduling} on.
     *
     * @return the release, or null (the default) if the store has none
     */
    protected ScheduledMessages scheduledMessages() {
        return null;
    }

    /**
     * {@inheritDoc} {@link StorageFencing} with {@link Builder#fencing} on; {@link MarkHarvest} and
     * {@link ParkedKeys} as the subclass says ({@link #hasMark()}, {@link #hasParkedKeys()}); every other capability
     * (a {@link CursorHarvest} read among them: every SQL store reads by cursor or stream) always;
     * {@link ScheduledMessages} if the subclass gives one ({@link #scheduledMessages()}).
     */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (type == ScheduledMessages.class) {
            return Optional.ofNullable(scheduledMessages()).map(type::cast);
        }
        boolean has = type == StorageFencing.class ? fencing() : type == MarkHarvest.class ? hasMark()
                : type == IdempotencyKeys.class ? idempotency.isOn()
                : type != ParkedKeys.class || hasParkedKeys();
        return has ? Store.super.capability(type) : Optional.empty();
    }

    /**
     * The leader table as it appears in SQL (storage fencing's epoch: one row, or one per shard and one for the
     * whole when sharded).
     *
     * @return the quoted, possibly schema-qualified name
     */
    public final String leaderTable() {
        return names.leader();
    }

    /**
     * {@inheritDoc}
     *
     * <p>An upsert of the leader table's row ({@link #leaderTable()}, {@link SqlTable#leaderRow()}): an update of an
     * existing row, which takes the row's lock and so waits for every fenced write under way.
     */
    @Override
    public final long acquireEpoch() {
        requireFencing("acquireEpoch");
        requireShards();
        return SqlFencing.acquireEpoch(tx, sql, "taking the leader epoch" + shardName() + " in " + names.leader()
                + " (storage fencing: the table is created by createSchema() and the shipped migrations;"
                + " Builder.fencing(false) turns fencing off)");
    }

    @Override
    public final Store fencedBy(long epoch) {
        requireFencing("fencedBy");
        return new FencedSqlStore(this, epoch);
    }

    private void requireFencing(String operation) {
        if (!fencing()) {
            throw new UnsupportedOperationException(operation + ": storage fencing is off for " + names.outbox()
                    + (fencing ? " (the WAL harvest is not fenced)" : " (Builder.fencing(false))"));
        }
    }

    /**
     * This database's statements for leader election in the database ({@link SqlLeaderTransport}); empty (the
     * default) if the store cannot host a lease, which the transport's builder then says. A store that can
     * overrides it.
     *
     * @return the lease statements for this store's lease table ({@link SqlTableNames#lease()}), or empty
     */
    protected Optional<SqlLeaseStatements> leaseStatements() {
        return Optional.empty();
    }

    /** The dialect, for the lease's transactions. */
    final SqlDialect dialect() {
        return dialect;
    }

    // ------------------------------------------------------------------------------------------ the harvest

    @Override
    public final MarkResult mark(UUID leaderId, int limit) {
        return mark(leaderId, limit, UNFENCED);
    }

    /**
     * {@link #mark}, fenced by {@code fence} unless it is {@link #UNFENCED}: the dialect's own statement.
     *
     * @param leaderId the marking leader's id; not null, not the nil UUID where the dialect uses it for "unmarked"
     * @param limit    the most rows to mark, at least 1
     * @param fence    the epoch the mark requires, or {@link #UNFENCED}
     * @return the marked rows, valid and rejected
     * @throws StoreException           if the database call fails
     * @throws dev.outbox.spi.StoreFencedException if fenced and the epoch is no longer {@code fence}
     */
    protected abstract MarkResult mark(UUID leaderId, int limit, long fence);

    /** Checks the arguments, merges the recheck ranges ({@link IdRanges}) and reads ({@link #readRows}). */
    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        List<IdRange> ranges = IdRanges.merged(recheck, SqlChecks.after(after));
        int checkedLimit = SqlChecks.limit(limit);
        requireShards();
        return readRows(after, ranges, checkedLimit);
    }

    /**
     * The cursor read in the dialect's statements, with its late-commit rule in the result's gap token and horizon.
     *
     * @param after  the cursor, at least 0: the read returns rows with greater ids
     * @param ranges the recheck ranges at or below {@code after}, ascending and merged
     * @param limit  the most rows above {@code after} to return, at least 1
     * @return the rows, with the read's gap token and horizon
     * @throws StoreException if the database call fails
     */
    protected abstract ReadResult readRows(long after, List<IdRange> ranges, int limit);

    // ------------------------------------------------------------------------------------------ batch writes

    @Override
    public final void purge(Collection<Long> ids) {
        purge(ids, UNFENCED);
    }

    @Override
    public final void reset(UUID leaderId, Collection<Long> ids) {
        reset(leaderId, ids, UNFENCED);
    }

    @Override
    public final void retryLater(Map<Long, Instant> nextAttempts) {
        retryLater(nextAttempts, UNFENCED);
    }

    @Override
    public final void park(Map<Long, String> reasons) {
        park(reasons, UNFENCED);
    }

    /**
     * {@link #purge}, fenced by {@code fence} unless it is {@link #UNFENCED}.
     *
     * @param ids   the ids to delete; not null, no null element
     * @param fence the epoch the write requires, or {@link #UNFENCED}
     */
    protected void purge(Collection<Long> ids, long fence) {
        writes.purge(ids, fence);
    }

    /**
     * {@link #reset}, fenced by {@code fence} unless it is {@link #UNFENCED}.
     *
     * @param leaderId the leader whose mark is cleared; not null
     * @param ids      the ids; not null, no null element
     * @param fence    the epoch the write requires, or {@link #UNFENCED}
     */
    protected void reset(UUID leaderId, Collection<Long> ids, long fence) {
        writes.reset(leaderId, ids, fence);
    }

    /**
     * {@link #retryLater}, fenced by {@code fence} unless it is {@link #UNFENCED}.
     *
     * @param nextAttempts the next attempt's time by id; not null, no null key or value
     * @param fence        the epoch the write requires, or {@link #UNFENCED}
     */
    protected void retryLater(Map<Long, Instant> nextAttempts, long fence) {
        writes.retryLater(nextAttempts, fence);
    }

    /**
     * {@link #park}, fenced by {@code fence} unless it is {@link #UNFENCED}.
     *
     * @param reasons the reason by id; not null, no null key (a null reason is stored as "(no reason given)")
     * @param fence   the epoch the write requires, or {@link #UNFENCED}
     */
    protected void park(Map<Long, String> reasons, long fence) {
        writes.park(reasons, fence);
    }

    // ------------------------------------------------------------------------------------------ gauges

    /**
     * The rows in the outbox table, marked or not. Exact up to {@value #EXACT_BACKLOG_LIMIT} rows (it counts the
     * head of the table); above that, the dialect's estimate ({@link SqlStatements#backlog()}), never less than
     * {@value #EXACT_BACKLOG_LIMIT} + 1.
     */
    @Override
    public long backlog() {
        return gauges.backlog();
    }

    /** The rows in the parked table, counted exactly (the parked table is meant to stay small). */
    @Override
    public long parkedCount() {
        return parkedRows.parkedCount();
    }

    /** The {@code create_time} of the row with the lowest id, found through an index. */
    @Override
    public Optional<Instant> oldestCreateTime() {
        return gauges.oldestCreateTime();
    }

    /**
     * The age of the row with the lowest id by the database's clock: its time now minus the row's
     * {@code create_time}, in the statement that finds the row ({@link #oldestCreateTime()}'s); zero if the clock
     * reads earlier.
     */
    @Override
    public Optional<Duration> oldestAge() {
        return gauges.oldestAge();
    }

    // ------------------------------------------------------------------------------------------ the parked area

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        return parkedRows.parked(query);
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        return parkedRows.parkedCount(query);
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        return parkedRows.parkedMessage(id);
    }

    @Override
    public int discard(Collection<Long> ids) {
        return parkedRows.discard(ids);
    }

    /** {@code SELECT DISTINCT key} over the parked table. */
    @Override
    public Set<String> parkedKeys() {
        return parkedRows.parkedKeys();
    }

    // ------------------------------------------------------------------------------------------ commit wake-ups

    /**
     * Makes {@code publisher}'s {@link SqlPublisher#committed()} wake this store's local commit watchers
     * ({@link #localCommitWatch}), and gives it this store's idempotency keys ({@link Builder#idempotencyKeys}); a
     * store calls it with the publisher it creates.
     *
     * @param publisher the store's publisher
     */
    protected final void wakeOnCommitted(SqlPublisher publisher) {
        publisher.onCommitted = localWatchers::wakeAll;
        publisher.idempotency = idempotency;
    }

    /**
     * A commit watch fed by this process's publishers only ({@link dev.outbox.Publisher#committed()}): what a store
     * whose database cannot notify offers from {@link #watchCommits}. It hears nothing of other processes' writers,
     * which the dispatcher's polling finds.
     *
     * @param wakeUp what a commit of this process's publishers runs; it must be quick and must not block
     * @return the watch, which the caller closes to stop being woken
     */
    protected final CommitSignals.CommitWatch localCommitWatch(Runnable wakeUp) {
        return localWatchers.watch(wakeUp);
    }

    /**
     * This process's publishers' commits ({@link #localCommitWatch}); a store with notifications of its own
     * overrides it.
     */
    @Override
    public CommitSignals.CommitWatch watchCommits(Runnable wakeUp) {
        return localCommitWatch(wakeUp);
    }

    // ------------------------------------------------------------------------------------------ schema

    /**
     * The DDL for this store's tables (the {@code schema.sql} resource of the store's package), with the
     * configured names filled in. Idempotent: it only creates what does not exist yet.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String schemaSql() {
        return schema.schemaSql();
    }

    /**
     * A DDL template of the store's class path ({@code resource}) with the configured names filled in: the tables'
     * ({@code ${outbox}}, {@code ${parked}}, {@code ${leader}}) and the store's own ({@link #fillIn}).
     *
     * @param resource the template's class-path resource, read through the store class's class loader
     * @return the DDL, names filled in
     * @throws IllegalStateException if the resource is missing
     * @throws UncheckedIOException  if it cannot be read
     */
    protected final String render(String resource) {
        return schema.render(resource);
    }

    /**
     * Fills in what else a store's DDL templates stand for (its own placeholders, such as the message-id function);
     * default: nothing.
     *
     * @param sql a template with the table names already filled in
     * @return the DDL with the store's own placeholders filled in
     */
    protected String fillIn(String sql) {
        return sql;
    }

    /**
     * Creates the outbox table and its parked table if they do not exist yet ({@link #schemaSql()}), and the tables of
     * the options that are on: the key sequence's counters ({@link Builder#keySequence}, {@link #keySequenceSchemaSql()}),
     * the idempotency keys ({@link Builder#idempotencyKeys}, {@link #idempotencySchemaSql()}) and the scheduled
     * messages ({@link Builder#scheduling}, {@link #schedulingSchemaSql()}). Safe to call
     * from several processes at once and on every start-up; it never changes a table that exists already.
     *
     * @throws StoreException if the DDL fails, for example for lack of privileges
     */
    public final void createSchema() {
        schema.create();
    }

    /**
     * The DDL of the key sequence's counter table, {@code <table>_key_seq} (the {@code key-sequence.sql} resource
     * next to the store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when the key
     * sequence is on ({@link Builder#keySequence}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String keySequenceSchemaSql() {
        return schema.sideTableSql(SqlKeySequence.RESOURCE);
    }

    /**
     * The DDL of the idempotency keys' table, {@code <table>_idempotency} (the {@code idempotency.sql} resource next
     * to the store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when idempotency keys
     * are on ({@link Builder#idempotencyKeys}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String idempotencySchemaSql() {
        return schema.sideTableSql(SqlIdempotency.RESOURCE);
    }

    /**
     * The database's idempotency statements ({@link Builder#idempotencyKeys}); default: none, and a store built with
     * idempotency keys on fails. Called once, from the constructor: it must not use the subclass's fields.
     *
     * @param table the idempotency table as it appears in SQL
     * @return the statements, or null if this store does not keep idempotency keys
     */
    protected SqlIdempotency.Statements idempotencyStatements(String table) {
        return null;
    }

    /** {@inheritDoc} Idempotency keys must be on ({@link Builder#idempotencyKeys}). */
    @Override
    public int deleteExpired(int limit) {
        return tx.inTransaction("deleting expired idempotency keys of " + SqlIdempotency.table(names), null,
                handle -> idempotency.deleteExpired(handle.getConnection(), limit));
    }

    /**
     * The DDL of the scheduled table, {@code <table>_scheduled} (the {@code scheduling.sql} resource next to the
     * store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when scheduling is on
     * ({@link Builder#scheduling}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String schedulingSchemaSql() {
        return schema.sideTableSql(SqlScheduling.RESOURCE);
    }

    /** {@return whether the store accepts delayed messages ({@link Builder#scheduling})} */
    public final boolean scheduling() {
        return scheduling;
    }

    /** {@return whether the publisher numbers messages per (topic, key) ({@link Builder#keySequence})} */
    public final boolean keySequence() {
        return keySequence;
    }

    /**
     * The DDL that makes an existing outbox table one of this store's shard count ({@link Builder#shards}): it
     * replaces the generated {@code shard} column (and its index) with one for this count, or drops it for 1 shard,
     * and lets the leader table hold one epoch row per shard. Changing the count moves most keys to another shard,
     * so run it only while no dispatcher of this outbox runs (README, "Sharded harvest"); the statements are
     * separated by {@code ;} at the end of a line. It rewrites the table (a generated column is stored).
     *
     * @param fromShards the count the table is made for now (1 if it has no {@code shard} column)
     * @return the DDL, names filled in
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link OutboxShards#MAX_SHARDS}
     */
    public abstract String reshardSql(int fromShards);

    /**
     * Runs {@link #reshardSql(int)} from the count the table is made for now (in one transaction where the
     * database's DDL is transactional, Postgres), then {@link #checkShards()}. Only while no dispatcher of this
     * outbox runs: one that still runs with the former count would harvest the keys that moved as a second leader.
     *
     * @throws StoreException if the DDL fails
     */
    public final void reshard() {
        schema.reshard();
    }

    /**
     * Runs {@code ddl}, this store's {@link #schemaSql()}, so that concurrent callers do not trip over each other.
     *
     * @param ddl the DDL to run: {@link #schemaSql()}, or {@link #reshardSql} for {@link #reshard()}
     * @throws StoreException if the DDL fails
     */
    protected abstract void createTables(String ddl);

    // ------------------------------------------------------------------------------------------ settings

    /**
     * The outbox table as it appears in SQL: quoted, and qualified if a schema was configured.
     *
     * @return the outbox table's name in SQL
     */
    public final String table() {
        return names.outbox();
    }

    /** {@return the parked table as it appears in SQL: quoted, possibly schema-qualified} */
    public final String parkedTable() {
        return names.parked();
    }

    /**
     * The statements the base runs for this store ({@link SqlStatements}), for the dialect's parts.
     *
     * @return the statements written for {@link #sqlTable()}
     */
    protected final SqlStatements sqlStatements() {
        return sql;
    }

    /** {@return the table, shard and settings this store's statements are written for} */
    protected final SqlTable sqlTable() {
        return table;
    }

    /**
     * The longest any statement (or lock wait) of a store call may take.
     *
     * @return the timeout set on the builder; default {@link #DEFAULT_STATEMENT_TIMEOUT}
     */
    public final Duration statementTimeout() {
        return statementTimeout;
    }

    /**
     * The longest key, in code points, that the publisher writes and that a marked row may have.
     *
     * @return the length set on the builder, or the dialect's default; at least 1
     */
    public final int maxKeyLength() {
        return maxKeyLength;
    }

    /**
     * How this store's calls run their transactions, for the parts of a store.
     *
     * @return the store's transactions, shared by its views
     */
    protected final SqlTransactions transactions() {
        return tx;
    }

    /**
     * The statement timeout as a JDBC query timeout: whole seconds, rounded up.
     *
     * @return the timeout in seconds, at least 1
     */
    protected final int queryTimeoutSeconds() {
        return tx.queryTimeoutSeconds();
    }

    /**
     * The decorators the publisher applies to every message, in order ({@link Builder#decorator}).
     *
     * @return the decorators; none if none was added
     */
    protected final MessageDecorators decorators() {
        return decorators;
    }

    /**
     * The connections this store works on, for an adapter that must hold one of its own (a listener).
     *
     * @return the builder's Jdbi
     */
    protected final Jdbi jdbi() {
        return tx.jdbi();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{table=" + names.outbox() + ", statementTimeout=" + statementTimeout
                + (shardCount == 1 ? "" : ", shards=" + shardCount) + (shardIndex < 0 ? "" : ", shard=" + shardIndex)
                + '}';
    }

    /**
     * A {@link Jdbi} over {@code dataSource}, for the stores' {@code builder(DataSource)} entry points; use a
     * pooling data source, since every call takes a connection and gives it back.
     *
     * @param dataSource the data source; not null
     * @return a new Jdbi over it
     * @throws NullPointerException if {@code dataSource} is null
     */

    protected static Jdbi jdbi(DataSource dataSource) {
        return Jdbi.create(Objects.requireNonNull(dataSource, "dataSource must not be null"));
    }

    /**
     * The settings every SQL store has ({@link SqlStoreBuilder}). Not thread-safe; {@code build()} returns an
     * immutable store.
     *
     * @param <B> the store's own builder
     * @param <S> the store
     */
    public abstract static class Builder<B extends Builder<B, S>, S extends SqlStore> extends SqlStoreBuilder<B, S> {
        /**
         * @param jdbi    where the store takes its connections
         * @param dialect what the store's database differs in
         * @param store   builds the store from this builder
         */
        protected Builder(Jdbi jdbi, SqlDialect dialect, Function<B, S> store) {
            super(jdbi, dialect, store);
        }
    }
}
