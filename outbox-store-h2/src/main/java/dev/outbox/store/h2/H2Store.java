package dev.outbox.store.h2;

import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.IdBinding;
import dev.outbox.store.sql.LateCommitWindow;
import dev.outbox.store.sql.SqlChecks;
import dev.outbox.store.sql.SqlDialect;
import dev.outbox.store.sql.SqlErrors;
import dev.outbox.store.sql.SqlFencing;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.store.sql.SqlBatchPublisher;
import dev.outbox.store.sql.SqlIdempotency;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlKeySequence;
import dev.outbox.store.sql.SqlPublisher;
import dev.outbox.store.sql.SqlLeaseStatements;
import dev.outbox.store.sql.SqlStore;
import org.jdbi.v3.core.Jdbi;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * The outbox on H2 2.x, embedded: for development and tests (a local profile, {@code @SpringBootTest}s), not for
 * production, where the application's own database and its store belong. Its statements are data
 * ({@code H2Statements}); everything but the mark, the read and the replay is {@link SqlStore}'s.
 * {@code H2Store.builder(dataSource).build().createSchema()}, e.g. on {@code jdbc:h2:mem:app;DB_CLOSE_DELAY=-1}.
 *
 * <p><b>Late commits.</b> H2's MVStore hides a transaction's rows until it commits, and a row takes its id when it
 * is inserted, so a read can pass an id whose row commits later; H2 cannot tell which transactions are still open,
 * so the read takes MySQL's rule ({@link LateCommitWindow}): an id passed unseen is rechecked for the
 * {@link Builder#lateCommitWindow late-commit window} (default 60 s), then taken to have rolled back; a writer open
 * longer has its row published by the next read from the head ({@code DispatcherConfig.rescanInterval}), late.
 *
 * <p><b>Locks and fencing.</b> A read locks nothing. The mark is one {@code SELECT ... FROM FINAL TABLE (UPDATE
 * ...)} over committed rows. H2 has no shared row lock: a fenced transaction (mark, purge, failure record, park)
 * locks the leader row {@code FOR UPDATE} first, so one leader's fenced writes queue behind one another, and an
 * epoch increment and a fenced write serialize on the row. Lock waits end at the statement timeout. One shard only;
 * no commit notifications (this process's publishers wake the leader). See the guide's "H2" page.
 *
 * <p>Immutable and thread-safe.
 */
public final class H2Store extends SqlStore {
    /** Which failures a retry may cure: a lost connection, a lock timeout, a deadlock, a cancelled statement. */
    static final SqlErrors ERRORS = new SqlErrors(Set.of("08", "40", "HYT00", "57014"),
            Set.of(50200, 40001, 90131, 57014, 90067, 90098, 90108), true);
    /** H2 names may be 256 characters long; quoted with double quotes, and then case-sensitive. */
    static final SqlDialect DIALECT = new SqlDialect(new SqlTableNames.Dialect("H2", 256, '"'),
            "dev/outbox/store/h2/schema.sql", ERRORS, Integer.MAX_VALUE, IdBinding.arrays("BIGINT", "VARCHAR"),
            H2Columns.INSTANCE, true);

    private final H2Statements statements;
    private final SqlBatchPublisher publisher;
    /** The scheduled messages' release, or null when scheduling is off ({@link Builder#scheduling}). */
    private final SqlScheduling scheduling;
    private final LateCommitWindow window;

    private H2Store(Builder builder) {
        super(builder, -1, H2Statements::shared);
        if (shardCount() > 1) {
            throw new IllegalStateException("the H2 store has one shard, not shards(" + shardCount() + "): it is for"
                    + " development and tests; shard with the Postgres or MySQL store");
        }
        this.statements = H2Statements.of(sqlTable());
        this.window = LateCommitWindow.of(builder.lateCommitWindow);
        this.scheduling = scheduling()
                ? H2Scheduling.release(transactions(), names, sqlStatements().prologue(),
                        SqlScheduling.holdsKey(builder)) : null;
        this.publisher = new SqlBatchPublisher(names.outbox(), statements.insert(), maxKeyLength(), decorators(),
                DIALECT, H2Columns::bindHeaders, keySequence()
                        ? SqlKeySequence.on(SqlKeySequence.perKey(new H2KeyCounter(SqlKeySequence.table(names))))
                        : SqlKeySequence.off(), scheduling, scheduling == null ? null : H2Scheduling.insertSql(names));
        wakeOnCommitted(publisher);
    }

    @Override
    protected ScheduledMessages scheduledMessages() {
        return scheduling;
    }

    /**
     * Starts a builder for an H2 store on the connections of {@code jdbi}.
     *
     * @param jdbi the connections the store reads and writes through; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code jdbi} is null
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(jdbi);
    }

    /**
     * Starts a builder for an H2 store on the connections of {@code dataSource}; use a pooling one.
     *
     * @param dataSource the database the store connects to; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code dataSource} is null
     */
    public static Builder builder(DataSource dataSource) {
        return builder(jdbi(dataSource));
    }

    /** The lease table's statements for H2 (leader election in the database). */
    @Override
    protected Optional<SqlLeaseStatements> leaseStatements() {
        return Optional.of(H2Statements.lease(names));
    }

    /** The writer of this outbox's rows, in the caller's transaction. */
    @Override
    public SqlPublisher publisher() {
        return publisher;
    }

    /** H2 runs the whole script as one command list; each {@code CREATE ... IF NOT EXISTS} commits on its own. */
    @Override
    protected void createTables(String ddl) {
        transactions().withHandle("creating the outbox schema for " + names.outbox(), handle -> {
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(ddl);
            }
            return null;
        });
    }

    /** @throws UnsupportedOperationException always: H2's outbox has one shard */
    @Override
    public String reshardSql(int fromShards) {
        throw new UnsupportedOperationException("the H2 store has one shard: it cannot reshard " + names.outbox()
                + " from " + fromShards);
    }

    @Override
    protected MarkResult mark(UUID leaderId, int limit, long fence) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        SqlChecks.limit(limit);
        requireShards();
        String operation = "marking up to " + limit + " rows of " + names.outbox() + " for leader " + leaderId;
        return transactions().inTransaction(operation, sqlStatements().prologue(), handle -> {
            Connection c = handle.getConnection();
            SqlFencing.lock(c, transactions(), sqlStatements().fenceLock(), operation, fence);
            try (PreparedStatement s = transactions().prepare(c, statements.mark())) {
                s.setObject(1, leaderId);
                s.setObject(2, leaderId);
                s.setInt(3, limit);
                return SqlChecks.marked(log, names.outbox(), rows(s));
            }
        });
    }

    /** One non-locking read, {@code id > ?} or in a recheck range, under the time window's late-commit rule. */
    @Override
    protected ReadResult readRows(long after, List<IdRange> ranges, int limit) {
        long horizon = window.horizon();
        MarkResult rows = transactions().inTransaction("reading up to " + limit + " rows of " + names.outbox()
                + " after id " + after, sqlStatements().prologue(), handle -> {
                    try (PreparedStatement s = transactions().prepare(handle.getConnection(),
                            statements.readSql(ranges.size()))) {
                        int p = 1;
                        s.setLong(p++, after);
                        for (IdRange range : ranges) {
                            s.setLong(p++, range.from());
                            s.setLong(p++, range.to());
                        }
                        s.setInt(p, limit);
                        return SqlChecks.marked(log, names.outbox(), rows(s));
                    }
                });
        return window.result(rows, horizon);
    }

    private List<MarkedRow> rows(PreparedStatement statement) throws SQLException {
        List<MarkedRow> rows = new ArrayList<>();
        try (ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                rows.add(H2Columns.INSTANCE.row(rs, maxKeyLength()));
            }
        }
        return rows;
    }

    /**
     * In one transaction: locks the parked rows and each replayed key's outbox rows above its first parked id, moves
     * the parked rows to the tail in parked id order, then the key's rows found before behind them, in their order.
     */
    @Override
    public int replay(Collection<Long> ids) {
        List<Long> sorted = SqlChecks.ids("ids", ids);
        if (sorted.isEmpty()) {
            return 0;
        }
        int replayed = transactions().inTransaction("replaying " + sorted.size() + " parked rows into "
                + names.outbox(), sqlStatements().prologue(), handle -> {
                    Connection c = handle.getConnection();
                    Map<String, Long> first = new TreeMap<>();
                    List<Long> present = new ArrayList<>();
                    try (PreparedStatement s = transactions().prepare(c, statements.lockKeys())) {
                        s.setArray(1, c.createArrayOf("BIGINT", sorted.toArray()));
                        for (ResultSet rs = s.executeQuery(); rs.next(); ) {
                            present.add(rs.getLong(1));
                            first.merge(rs.getString(2), rs.getLong(1), Math::min);
                        }
                    }
                    List<Long> behind = new ArrayList<>();
                    for (Map.Entry<String, Long> key : first.entrySet()) {
                        try (PreparedStatement s = transactions().prepare(c, statements.behind())) {
                            s.setString(1, key.getKey());
                            s.setLong(2, key.getValue());
                            for (ResultSet rs = s.executeQuery(); rs.next(); ) {
                                behind.add(rs.getLong(1));
                            }
                        }
                    }
                    behind.sort(null);
                    update(c, statements.requeue(), present);
                    update(c, statements.unpark(), present);
                    update(c, statements.moveBack(), behind);
                    update(c, statements.delete(), behind);
                    return present.size();
                });
        log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        return replayed;
    }

    private void update(Connection c, String sql, List<Long> ids) throws SQLException {
        if (!ids.isEmpty()) {
            try (PreparedStatement s = transactions().prepare(c, sql)) {
                s.setArray(1, c.createArrayOf("BIGINT", ids.toArray()));
                s.executeUpdate();
            }
        }
    }

    /** {@return how long a read's gap is rechecked: the window set on the builder, default 60 s} */
    public Duration lateCommitWindow() {
        return window.window();
    }

    /**
     * Configures an {@link H2Store}: the SQL store's settings and {@link #lateCommitWindow}. Not thread-safe;
     * {@link #build()} returns an immutable store. Every setter rejects a bad value at once, naming it.
     */
    public static final class Builder extends SqlStore.Builder<Builder, H2Store> {
        private Duration lateCommitWindow = LateCommitWindow.DEFAULT;

        private Builder(Jdbi jdbi) {
            super(jdbi, DIALECT, H2Store::new);
        }

        /**
         * How long the cursor harvest rechecks an id it passed without seeing its row before it takes the id to have
         * rolled back; default 60 s, at least 1 ms, at most a day. Set it above the longest transaction in which
         * your application writes to the outbox (see the class Javadoc's "Late commits").
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

    /** H2's idempotency statements: one claim ({@code MERGE}) per key ({@code H2Idempotency}). */
    @Override
    protected SqlIdempotency.Statements idempotencyStatements(String table) {
        return H2Idempotency.statements(table);
    }
}
