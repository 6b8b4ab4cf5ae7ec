package dev.outbox.store.sql;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.CommitWatchers;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
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

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
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
 * {@link #reshardSql}). Its members of one concern that are the store's own API are declared in a package-private
 * layer below it, which it extends: the settings it is built with and hands its rooms ({@code SqlStoreSettings}), the
 * views of its shards and the shard check ({@code SqlShardViews}), the schema's DDL and scripts
 * ({@code SqlStoreSchema}).
 *
 * <p>For store implementations, not for applications. Subclasses are immutable and thread-safe.
 */
public abstract class SqlStore extends SqlStoreSchema implements Store, MarkHarvest, CursorHarvest, CommitSignals,
        StorageFencing, Sharding, ParkedRecords, ParkedKeys, Gauges, IdempotencyKeys {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "outbox";
    /** The default statement timeout. */
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);
    /** Up to this many rows {@link #backlog()} counts exactly; above, it estimates. */
    public static final long EXACT_BACKLOG_LIMIT = 100_000;
    /** An unfenced write: no epoch is checked ({@link SqlFencing#UNFENCED}). */
    protected static final long UNFENCED = SqlFencing.UNFENCED;

    /** The wake-ups of this process's dispatchers that watch commits locally ({@link #localCommitWatch}). */
    private final CommitWatchers localWatchers = new CommitWatchers();
    private final ParkedRows parkedRows;
    private final SqlGauges gauges;
    private final SqlBatchWrites writes;
    private final boolean fencing;

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
        super(builder, shardIndex, statements);
        this.fencing = builder.fencing;
        SqlTransactions tx = transactions();
        SqlStatements sql = sqlStatements();
        SqlDialect dialect = dialect();
        this.parkedRows = new ParkedRows(tx, sql, dialect.columns(), dialect.ids(), names.parked());
        this.gauges = new SqlGauges(tx, sql, dialect.columns(), names.outbox());
        this.writes = new SqlBatchWrites(tx, sql, dialect, names.outbox());
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
                : type == IdempotencyKeys.class ? idempotency().isOn()
                : type != ParkedKeys.class || hasParkedKeys();
        return has ? Store.super.capability(type) : Optional.empty();
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
        return SqlFencing.acquireEpoch(transactions(), sqlStatements(), "taking the leader epoch" + shardName()
                + " in " + names.leader() + " (storage fencing: the table is created by createSchema() and the shipped migrations;"
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
        publisher.idempotency = idempotency();
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

    // ------------------------------------------------------------------------------------------ idempotency keys

    /** {@inheritDoc} Idempotency keys must be on ({@link Builder#idempotencyKeys}). */
    @Override
    public int deleteExpired(int limit) {
        return transactions().inTransaction("deleting expired idempotency keys of " + SqlIdempotency.table(names), null,
                handle -> idempotency().deleteExpired(handle.getConnection(), limit));
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
