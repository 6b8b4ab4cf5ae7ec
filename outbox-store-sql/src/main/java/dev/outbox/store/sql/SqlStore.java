package dev.outbox.store.sql;

import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.CommitWatchers;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.SqlStoreSettings;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executor;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import dev.outbox.MessageDecorator;
import dev.outbox.spi.MessageDecorators;

/**
 * What the SQL stores share: the builder's settings, the table names, the DDL template, the timeouts, and how a
 * call takes a connection, bounds it and gives it back. Each store ({@code PostgresStore}, {@code MySqlStore})
 * keeps its own statements and transactions, since those are the algorithms that really differ; what differs as
 * data is in its {@link SqlDialect}.
 *
 * <p>For store implementations, not for applications. Subclasses are immutable and thread-safe.
 */
public abstract class SqlStore implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding,
        ParkedRecords, ParkedKeys, Gauges {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "outbox";
    /** The default statement timeout. */
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);
    /** Up to this many rows {@link #backlog()} counts exactly; above, it estimates. */
    public static final long EXACT_BACKLOG_LIMIT = 100_000;

    private static final Executor DIRECT = Runnable::run;

    /** The store's logger, named after the concrete store. */
    protected final Logger log = LoggerFactory.getLogger(getClass());
    /** The validated, quoted table names. */
    protected final SqlTableNames names;
    /** The wake-ups of this process's dispatchers that watch commits locally ({@link #localCommitWatch}). */
    private final CommitWatchers localWatchers = new CommitWatchers();
    private final SqlDialect dialect;
    private final Jdbi jdbi;
    private final Duration statementTimeout;
    private final int queryTimeoutSeconds;
    private final int networkTimeoutMillis;
    private final int maxKeyLength;
    private final MessageDecorators decorators;
    private final boolean fencing;
    /** The outbox's shard count ({@link Builder#shards}). */
    private final int shardCount;
    /** The shard this store object is the view of ({@link #shard}), or -1 for the whole outbox. */
    private final int shardIndex;
    /** Whether {@link #checkShards()} found the table's shard count to be {@link #shardCount}; checked once. */
    private volatile boolean shardsChecked;

    /** Takes the builder's settings; the builder validated each of them. */
    protected SqlStore(Builder<?, ?> builder) {
        this(builder, -1);
    }

    /**
     * Takes the builder's settings for the whole outbox ({@code shardIndex} -1) or for the view of one of its shards
     * ({@link #shard}).
     */
    protected SqlStore(Builder<?, ?> builder, int shardIndex) {
        this.shardCount = builder.shards;
        this.shardIndex = shardIndex < 0 ? -1 : dev.outbox.OutboxShards.checkIndex(shardIndex, builder.shards);
        this.dialect = builder.dialect;
        this.jdbi = builder.jdbi;
        this.names = dialect.tableNames().names(builder.schema, builder.table);
        this.statementTimeout = builder.statementTimeout;
        this.queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE, (statementTimeout.toMillis() + 999) / 1000);
        this.networkTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, statementTimeout.toMillis() * 2);
        this.maxKeyLength = builder.maxKeyLength;
        this.decorators = MessageDecorators.of(builder.decorators);
        this.fencing = builder.fencing;
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

    /** The outbox's shard count as configured ({@link Builder#shards}), for the whole store and its views alike. */
    public final int shardCount() {
        return shardCount;
    }

    /** The shard this store is the view of, or -1 for the whole outbox. */
    protected final int shardIndex() {
        return shardIndex;
    }

    /** The leader table's row this store's epoch lives in: 1 unsharded; 0 for a sharded whole; shard + 1. */
    protected final int leaderRow() {
        return shardIndex >= 0 ? shardIndex + 1 : shardCount > 1 ? 0 : 1;
    }

    /** {@code "shard = <i> AND "} for a shard's view, empty for the whole outbox: a literal, never user text. */
    protected final String shardAnd() {
        return shardIndex < 0 ? "" : "shard = " + shardIndex + " AND ";
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
        if (shardsChecked) {
            return;
        }
        Optional<String> expression = shardExpression();
        int tableShards = expression.isEmpty() ? 1 : shardCountOf(expression.get());
        if (tableShards != shardCount) {
            throw new StoreException(names.outbox() + " is made for " + tableShards + " shard(s)"
                    + (expression.isEmpty() ? " (it has no generated shard column, or does not exist yet)"
                    : " (its shard column is " + expression.get() + ")") + ", but this store is configured with "
                    + shardCount + " shard(s): start every dispatcher with shards(" + tableShards + "), or change the"
                    + " table's count while no dispatcher runs (README, \"Sharded harvest\")", null, false);
        }
        shardsChecked = true;
    }

    /**
     * The generation expression of the outbox table's {@code shard} column, as the database reports it; empty if
     * the table has no such generated column.
     */
    protected abstract Optional<String> shardExpression();

    private static final java.util.regex.Pattern MODULUS =
            java.util.regex.Pattern.compile("(?:%|\\bmod\\b)\\s*\\(*\\s*(\\d+)", java.util.regex.Pattern.CASE_INSENSITIVE);

    /**
     * The shard count a {@code shard} column's generation expression stands for: the number after its last
     * {@code %} (or {@code MOD}), as Postgres, MySQL and MariaDB print the expression the stores create.
     *
     * @throws StoreException (not retriable) naming the expression if it holds no such number
     */
    static int shardCountOf(String expression) {
        java.util.regex.Matcher m = MODULUS.matcher(expression);
        String count = null;
        while (m.find()) {
            count = m.group(1);
        }
        if (count == null || !expression.toLowerCase(java.util.Locale.ROOT).contains("md5")) {
            throw new StoreException("cannot tell the shard count from the shard column's expression " + expression
                    + ": it is not the md5-of-the-key modulo a count that the store creates", null, false);
        }
        return Integer.parseInt(count);
    }

    /** Runs {@link #checkShards()} before a harvest call. */
    protected final void requireShards() {
        if (!shardsChecked) {
            checkShards();
        }
    }

    // ------------------------------------------------------------------------------------------ storage fencing

    /** An unfenced write: no epoch is checked. */
    protected static final long UNFENCED = -1;

    /** Whether {@link Builder#fencing storage fencing} is on: the store then has {@link StorageFencing}. */
    protected boolean fencing() {
        return fencing;
    }

    /** Whether the store marks rows ({@link MarkHarvest}); true unless a subclass harvests otherwise. */
    protected boolean hasMark() {
        return true;
    }

    /** Whether the store reads by cursor or stream ({@link CursorHarvest}); true unless a subclass cannot. */
    protected boolean hasRead() {
        return true;
    }

    /** Whether the store lists its parked keys for held keys ({@link ParkedKeys}); false unless a subclass does. */
    protected boolean hasParkedKeys() {
        return false;
    }

    /**
     * {@inheritDoc} {@link StorageFencing} with {@link Builder#fencing} on, {@link MarkHarvest},
     * {@link CursorHarvest} and {@link ParkedKeys} as the subclass says ({@link #hasMark()}, {@link #hasRead()},
     * {@link #hasParkedKeys()}); every other capability always.
     */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        boolean has = type == StorageFencing.class ? fencing() : type == MarkHarvest.class ? hasMark()
                : type == CursorHarvest.class ? hasRead() : type != ParkedKeys.class || hasParkedKeys();
        return has ? Store.super.capability(type) : Optional.empty();
    }

    /** The leader table as it appears in SQL (storage fencing's epoch, one row). */
    public final String leaderTable() {
        return names.leader();
    }

    /**
     * {@inheritDoc}
     *
     * <p>An upsert of the leader table's one row ({@link #leaderTable()}): an {@code UPDATE} of an existing row, which
     * takes the row's lock and so waits for every fenced write under way (each holds a share lock of the row until
     * it commits).
     */
    @Override
    public final long acquireEpoch() {
        requireFencing("acquireEpoch");
        requireShards();
        return takeEpoch();
    }

    /** Increments the epoch in the leader table and returns it, committed. */
    protected abstract long takeEpoch();

    @Override
    public final Store fencedBy(long epoch) {
        requireFencing("fencedBy");
        if (epoch < 1) {
            throw new IllegalArgumentException("epoch must be at least 1 (one acquireEpoch() returned): " + epoch);
        }
        return new Fenced(epoch);
    }

    private void requireFencing(String operation) {
        if (!fencing()) {
            throw new UnsupportedOperationException(operation + ": storage fencing is off for " + names.outbox()
                    + (fencing ? " (the WAL harvest is not fenced)" : " (Builder.fencing(false))"));
        }
    }

    /**
     * What a fenced write of {@code operation} saw: nothing if the leader table's epoch was {@code epoch} (the
     * statement then did its work), else a {@link StoreFencedException} (it changed nothing).
     *
     * @param seen the epoch the statement read under its share lock, null if the row is missing
     */
    protected static void checkFence(String operation, long epoch, Long seen) {
        if (seen == null || seen != epoch) {
            throw new StoreFencedException(operation, epoch, seen == null ? -1 : seen);
        }
    }

    /** {@link #mark}, fenced by {@code fence} unless it is {@link #UNFENCED}. */
    protected abstract MarkResult mark(UUID leaderId, int limit, long fence);

    /** {@link #purge}, fenced by {@code fence} unless it is {@link #UNFENCED}. */
    protected abstract void purge(Collection<Long> ids, long fence);

    /** {@link #reset}, fenced by {@code fence} unless it is {@link #UNFENCED}. */
    protected abstract void reset(UUID leaderId, Collection<Long> ids, long fence);

    /** {@link #retryLater}, fenced by {@code fence} unless it is {@link #UNFENCED}. */
    protected abstract void retryLater(Map<Long, Instant> nextAttempts, long fence);

    /** {@link #park}, fenced by {@code fence} unless it is {@link #UNFENCED}. */
    protected abstract void park(Map<Long, String> reasons, long fence);

    @Override
    public final MarkResult mark(UUID leaderId, int limit) {
        return mark(leaderId, limit, UNFENCED);
    }

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
     * The store's writes fenced by one epoch — purge, retry, park and the mark — and nothing else: every other
     * capability is the store's own. Immutable, thread-safe.
     */
    private final class Fenced implements Store, MarkHarvest {
        private final long fence;

        Fenced(long fence) {
            this.fence = fence;
        }

        @Override
        public Publisher publisher() {
            return SqlStore.this.publisher();
        }

        @Override
        public MarkResult mark(UUID leaderId, int limit) {
            return SqlStore.this.mark(leaderId, limit, fence);
        }

        @Override
        public void reset(UUID leaderId, Collection<Long> ids) {
            SqlStore.this.reset(leaderId, ids, fence);
        }

        @Override
        public void purge(Collection<Long> ids) {
            SqlStore.this.purge(ids, fence);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            SqlStore.this.retryLater(nextAttempts, fence);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            SqlStore.this.park(reasons, fence);
        }

        @Override
        public <T> Optional<T> capability(Class<T> type) {
            if (type == MarkHarvest.class) {
                return SqlStore.this.capability(type).map(own -> type.cast(this));
            }
            return SqlStore.this.capability(type);
        }

        @Override
        public String toString() {
            return SqlStore.this + " fenced by epoch " + fence;
        }
    }

    /** The decorators the publisher applies to every message, in order ({@link Builder#decorator}). */
    /**
     * Makes {@code publisher}'s {@link SqlPublisher#committed()} wake this store's local commit watchers
     * ({@link #localCommitWatch}); a store calls it with the publisher it creates.
     */
    protected final void wakeOnCommitted(SqlPublisher publisher) {
        publisher.onCommitted = localWatchers::wakeAll;
    }

    /**
     * A commit watch fed by this process's publishers only ({@link dev.outbox.Publisher#committed()}): what a store
     * whose database cannot notify offers from {@link #watchCommits}. It hears nothing of other processes' writers,
     * which the dispatcher's polling finds.
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

    /** The connections this store works on, for an adapter that must hold one of its own (a listener). */
    protected final Jdbi jdbi() {
        return jdbi;
    }

    protected final MessageDecorators decorators() {
        return decorators;
    }

    /**
     * The DDL for this store's tables (the {@code schema.sql} resource of the store's package), with the
     * configured names filled in. Idempotent: it only creates what does not exist yet.
     */
    public final String schemaSql() {
        return render(dialect.schemaResource());
    }

    /**
     * A DDL template of the store's class path ({@code resource}) with the configured names filled in: the tables'
     * ({@code ${outbox}}, {@code ${parked}}, {@code ${leader}}) and the store's own ({@link #fillIn}).
     */
    protected final String render(String resource) {
        String template;
        try (InputStream in = getClass().getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("resource " + resource + " is missing from the classpath");
            }
            template = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource, e);
        }
        return fillIn(template.replace("${outbox}", names.outbox()).replace("${parked}", names.parked())
                .replace("${leader}", names.leader()));
    }

    /**
     * Fills in what else a store's DDL templates stand for (its own placeholders, such as the message-id function);
     * default: nothing.
     */
    protected String fillIn(String sql) {
        return sql;
    }

    /**
     * Creates the outbox table and its parked table if they do not exist yet ({@link #schemaSql()}). Safe to call
     * from several processes at once and on every start-up; it never changes a table that exists already.
     *
     * @throws StoreException if the DDL fails, for example for lack of privileges
     */
    public final void createSchema() {
        createTables(schemaSql());
        checkShards();
        log.info("Outbox schema ready: {} and {}", names.outbox(), names.parked());
    }

    /**
     * The DDL that makes an existing outbox table one of this store's shard count ({@link Builder#shards}): it
     * replaces the generated {@code shard} column (and its index) with one for this count, or drops it for 1 shard,
     * and lets the leader table hold one epoch row per shard. Changing the count moves most keys to another shard,
     * so run it only while no dispatcher of this outbox runs (README, "Sharded harvest"); the statements are
     * separated by {@code ;} at the end of a line. It rewrites the table (a generated column is stored).
     *
     * @param fromShards the count the table is made for now (1 if it has no {@code shard} column)
     * @throws IllegalArgumentException naming the count if it is not between 1 and
     *                                  {@link dev.outbox.OutboxShards#MAX_SHARDS}
     */
    public abstract String reshardSql(int fromShards);

    /**
     * Runs {@link #reshardSql(int)} from the count the table is made for now (in one transaction where the
     * database's DDL is transactional, Postgres), then {@link #checkShards()}. Only while no dispatcher of this outbox runs: one that still runs with the former
     * count would harvest the keys that moved as a second leader.
     *
     * @throws StoreException if the DDL fails
     */
    public final void reshard() {
        Optional<String> expression = shardExpression();
        createTables(reshardSql(expression.isEmpty() ? 1 : shardCountOf(expression.get())));
        shardsChecked = false;
        checkShards();
        log.info("{} resharded to {} shard(s)", names.outbox(), shardCount);
    }

    /**
     * Runs {@code ddl}, this store's {@link #schemaSql()}, so that concurrent callers do not trip over each other.
     *
     * @throws StoreException if the DDL fails
     */
    protected abstract void createTables(String ddl);

    /** The outbox table as it appears in SQL: quoted, and qualified if a schema was configured. */
    public final String table() {
        return names.outbox();
    }

    /** The parked table as it appears in SQL. */
    public final String parkedTable() {
        return names.parked();
    }

    /** The longest any statement (or lock wait) of a store call may take. */
    public final Duration statementTimeout() {
        return statementTimeout;
    }

    /** The longest key, in code points, that the publisher writes and that a marked row may have. */
    public final int maxKeyLength() {
        return maxKeyLength;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{table=" + names.outbox() + ", statementTimeout=" + statementTimeout
                + (shardCount == 1 ? "" : ", shards=" + shardCount) + (shardIndex < 0 ? "" : ", shard=" + shardIndex)
                + '}';
    }

    /** The statement timeout as a JDBC query timeout: whole seconds, rounded up. */
    protected final int queryTimeoutSeconds() {
        return queryTimeoutSeconds;
    }

    /** Translates {@code failure} of {@code operation} by the dialect's rules. */
    protected final StoreException translate(String operation, Throwable failure) {
        return dialect.errors().translate(operation, failure);
    }

    /**
     * The {@link MarkResult} of the rows one mark read, each sorted by id; logs a warning naming the first row
     * that is not a valid message.
     */
    protected final MarkResult marked(Collection<? extends MarkedRow> rows) {
        MarkResult result = MarkedRow.result(rows);
        if (!result.rejected().isEmpty()) {
            MarkResult.Rejected first = result.rejected().get(0);
            log.warn("Marked {} row(s) of {} that are not valid messages, first: id {}: {}",
                    result.rejected().size(), names.outbox(), first.id(), first.reason());
        }
        return result;
    }

    /** Work on a handle that may throw SQL exceptions. */
    @FunctionalInterface
    protected interface Work<T> {
        T run(Handle handle) throws SQLException;
    }

    /**
     * Runs {@code work} on a connection of its own, with the connection's network timeout set to twice the
     * statement timeout (so that even a silent network failure ends the call) and restored afterwards; translates
     * every failure into a {@link StoreException} naming {@code operation}. The work begins and ends its own
     * transaction.
     */
    protected final <T> T withHandle(String operation, Work<T> work) {
        Handle handle;
        try {
            handle = jdbi.open();
        } catch (JdbiException | IllegalStateException e) {
            throw translate(operation, e);
        }
        Connection connection = handle.getConnection();
        Integer previousNetworkTimeout = null;
        try {
            previousNetworkTimeout = setNetworkTimeout(connection);
            return work.run(handle);
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw translate(operation, e);
        } finally {
            release(handle, connection, previousNetworkTimeout);
        }
    }

    private Integer setNetworkTimeout(Connection connection) throws SQLException {
        try {
            int previous = connection.getNetworkTimeout();
            connection.setNetworkTimeout(DIRECT, networkTimeoutMillis);
            return previous;
        } catch (SQLFeatureNotSupportedException | UnsupportedOperationException e) {
            log.debug("The connection does not support a network timeout; relying on the statement timeout", e);
            return null;
        }
    }

    private void release(Handle handle, Connection connection, Integer previousNetworkTimeout) {
        try {
            if (previousNetworkTimeout != null && !connection.isClosed()) {
                connection.setNetworkTimeout(DIRECT, previousNetworkTimeout);
            }
        } catch (SQLException | RuntimeException e) {
            log.debug("Could not restore the connection's network timeout", e);
        }
        try {
            handle.close();
        } catch (RuntimeException e) {
            // The work is done (committed or rolled back) by now; a broken connection fails to close quietly.
            log.debug("Could not close a connection cleanly", e);
        }
    }

    /**
     * Checks a mark's or a listing's {@code limit}.
     *
     * @throws IllegalArgumentException if it is less than 1
     */
    protected static int limit(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return limit;
    }

    /**
     * The ids, checked, without duplicates, ascending (so that rows are always locked in the same order).
     *
     * @throws IllegalArgumentException naming the position of a null id
     */
    protected static List<Long> ids(String what, Collection<Long> ids) {
        Objects.requireNonNull(ids, what + " must not be null");
        TreeSet<Long> sorted = new TreeSet<>();
        int i = 0;
        for (Long id : ids) {
            if (id == null) {
                throw new IllegalArgumentException(what + " contains null at position " + i);
            }
            sorted.add(id);
            i++;
        }
        return new ArrayList<>(sorted);
    }

    /**
     * The reasons to park rows with, by ascending id: a null reason becomes {@code "(no reason given)"}, and each
     * reason passes through {@code clean}, which makes it storable in the database's text column.
     *
     * @throws IllegalArgumentException if an id is null
     */
    protected static TreeMap<Long, String> reasons(Map<Long, String> reasons, UnaryOperator<String> clean) {
        Objects.requireNonNull(reasons, "reasons must not be null");
        TreeMap<Long, String> sorted = new TreeMap<>();
        for (Map.Entry<Long, String> entry : reasons.entrySet()) {
            if (entry.getKey() == null) {
                throw new IllegalArgumentException("reasons contains a null id");
            }
            sorted.put(entry.getKey(), clean.apply(entry.getValue() == null ? "(no reason given)" : entry.getValue()));
        }
        return sorted;
    }

    /**
     * The next attempt times to record by id, ascending (so that rows are always locked in the same order).
     *
     * @throws IllegalArgumentException naming a null id or the id of a null time
     */
    protected static TreeMap<Long, Instant> nextAttempts(Map<Long, Instant> nextAttempts) {
        Objects.requireNonNull(nextAttempts, "nextAttempts must not be null");
        TreeMap<Long, Instant> sorted = new TreeMap<>();
        for (Map.Entry<Long, Instant> entry : nextAttempts.entrySet()) {
            if (entry.getKey() == null) {
                throw new IllegalArgumentException("nextAttempts contains a null id");
            }
            if (entry.getValue() == null) {
                throw new IllegalArgumentException("nextAttempts has no time for id " + entry.getKey());
            }
            sorted.put(entry.getKey(), entry.getValue());
        }
        return sorted;
    }

    /**
     * A {@link Jdbi} over {@code dataSource}, for the stores' {@code builder(DataSource)} entry points; use a
     * pooling data source, since every call takes a connection and gives it back.
     */
    protected static Jdbi jdbi(DataSource dataSource) {
        return Jdbi.create(Objects.requireNonNull(dataSource, "dataSource must not be null"));
    }

    /**
     * The settings every SQL store has. Not thread-safe; {@code build()} returns an immutable store. Every setter
     * rejects a bad value at once, naming it.
     *
     * @param <B> the store's own builder
     * @param <S> the store
     */
    @SuppressWarnings("unchecked") // B is the concrete builder itself
    public abstract static class Builder<B extends Builder<B, S>, S extends SqlStore> {
        private final Jdbi jdbi;
        private final SqlDialect dialect;
        private final Function<B, S> store;
        private String schema;
        private String table = DEFAULT_TABLE;
        private Duration statementTimeout = DEFAULT_STATEMENT_TIMEOUT;
        private int maxKeyLength;
        private final List<MessageDecorator> decorators = new ArrayList<>();
        private boolean fencing = true;
        private int shards = 1;

        /**
         * @param jdbi    where the store takes its connections
         * @param dialect what the store's database differs in
         * @param store   builds the store from this builder
         */
        protected Builder(Jdbi jdbi, SqlDialect dialect, Function<B, S> store) {
            this.jdbi = Objects.requireNonNull(jdbi, "jdbi must not be null");
            this.dialect = Objects.requireNonNull(dialect, "dialect must not be null");
            this.store = Objects.requireNonNull(store, "store must not be null");
            this.maxKeyLength = dialect.defaultMaxKeyLength();
        }

        /**
         * The schema (MySQL: the database) of the outbox tables. Default: none, so the tables are found through
         * the connection's defaults (Postgres' {@code search_path}, MySQL's current database). Lower-case letters,
         * digits and underscores, at most the database's identifier limit (63 characters in Postgres, 64 in
         * MySQL).
         */
        public final B schema(String schema) {
            this.schema = dialect.tableNames().validateSchema(schema);
            return (B) this;
        }

        /**
         * The outbox table's name; the parked rows go to a table of the same name with {@code _parked} appended.
         * Default {@value SqlStore#DEFAULT_TABLE}. Lower-case letters, digits and underscores, short enough for the
         * parked table's name to fit the database's identifier limit (at most 56 characters in Postgres, 57 in
         * MySQL).
         */
        public final B table(String table) {
            this.table = dialect.tableNames().validateTable(table);
            return (B) this;
        }

        /**
         * The longest any statement (or lock wait) of a store call may take; default 30 s, at least 1 ms. Where it
         * is applied as a JDBC query timeout, it is rounded up to whole seconds.
         */
        public final B statementTimeout(Duration statementTimeout) {
            this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
            return (B) this;
        }

        /**
         * The longest key, in characters (Unicode code points: a character outside the Basic Multilingual Plane
         * counts once), that the publisher writes and that a marked row may have (a longer one, written by plain
         * SQL, is rejected so that the dispatcher parks it). Set it to what your consumers accept; the store's
         * documentation gives its default.
         */
        public final B maxKeyLength(int maxKeyLength) {
            this.maxKeyLength = SqlStoreSettings.maxKeyLength(maxKeyLength);
            return (B) this;
        }

        /**
         * Adds a decorator that the publisher applies to every message before writing it (after the decorators
         * added before it): to add or change headers, or to reject a message; see {@link MessageDecorator}. None by
         * default.
         */
        public final B decorator(MessageDecorator decorator) {
            decorators.add(Objects.requireNonNull(decorator, "decorator must not be null"));
            return (B) this;
        }

        /**
         * Storage fencing: whether the dispatcher takes the outbox's leader epoch in the database when it becomes
         * leader, and every purge, failure record, park and mark of a leader checks that epoch in the same statement
         * (Postgres) or transaction (MySQL), so that a deposed leader's writes (a process paused past its lease, or
         * cut off, that resumes after a successor took over) change nothing. Default on: the check costs little (see
         * the README's "Failure modes"). Needs the leader table, {@code <table>_leader}, which {@code createSchema()}
         * and the shipped migrations create; turn it off only for a schema without it.
         */
        public final B fencing(boolean fencing) {
            this.fencing = fencing;
            return (B) this;
        }

        /**
         * How many shards the outbox is split into (see the README's "Sharded harvest"): each row's shard is
         * {@link dev.outbox.OutboxShards#shardOf} of its key, computed by the table (a generated column that
         * {@link SqlStore#schemaSql()} adds, indexed with the id), and the dispatcher harvests each shard through
         * {@link SqlStore#shard} with a leader and an epoch of its own. Default 1: today's table and statements. The
         * store refuses a table made for another count ({@link SqlStore#checkShards()}).
         *
         * @throws IllegalArgumentException naming the count if it is not between 1 and
         *                                  {@link dev.outbox.OutboxShards#MAX_SHARDS}
         */
        public final B shards(int shards) {
            this.shards = dev.outbox.OutboxShards.checkCount(shards);
            return (B) this;
        }

        /** The store, immutable and thread-safe. */
        public final S build() {
            return store.apply((B) this);
        }
    }
}
