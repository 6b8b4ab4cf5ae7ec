package dev.outbox.store.sql;

import dev.outbox.OutboxShards;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * The first of {@link SqlStore}'s layers: what a SQL store is built with and hands its rooms — the builder's
 * settings, read once (the table names, the statement timeout, the longest key, the decorators, the options that are
 * on, the shard count and the shard a view is of), the dialect, the statements written for the table, and how a call
 * runs its transaction. Its public and protected members are {@link SqlStore}'s (the layers above it are {@link SqlShardViews}
 * and {@link SqlStoreSchema}); package-private so that only {@link SqlStore} is the API. Immutable and thread-safe.
 */
abstract class SqlStoreSettings {
    /** The store's logger, named after the concrete store. */
    protected final Logger log = LoggerFactory.getLogger(getClass());
    /** The validated, quoted table names. */
    protected final SqlTableNames names;
    private final SqlDialect dialect;
    private final SqlTransactions tx;
    private final SqlTable table;
    private final SqlStatements sql;
    private final Duration statementTimeout;
    private final int maxKeyLength;
    private final MessageDecorators decorators;
    private final boolean keySequence;
    private final SqlIdempotency idempotency;
    private final boolean scheduling;
    private final int shardCount;
    /** The shard this store object is the view of ({@link SqlStore#shard}), or -1 for the whole outbox. */
    private final int shardIndex;

    /** {@link SqlStore}'s constructor says what it takes and throws. */
    SqlStoreSettings(SqlStoreBuilder<?, ?> builder, int shardIndex, Function<SqlTable, SqlStatements> statements) {
        this.shardCount = builder.shards;
        this.shardIndex = shardIndex < 0 ? -1 : OutboxShards.checkIndex(shardIndex, builder.shards);
        this.dialect = builder.dialect;
        this.names = dialect.tableNames().names(builder.schema, builder.table);
        this.statementTimeout = builder.statementTimeout;
        this.tx = new SqlTransactions(builder.jdbi, dialect.errors(), statementTimeout, dialect.queryTimeouts());
        this.maxKeyLength = builder.maxKeyLength;
        this.decorators = MessageDecorators.of(builder.decorators);
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
    }

    /**
     * The outbox's shard count as configured ({@link SqlStore.Builder#shards}), for the whole store and its views
     * alike.
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
     * The leader table as it appears in SQL (storage fencing's epoch: one row, or one per shard and one for the
     * whole when sharded).
     *
     * @return the quoted, possibly schema-qualified name
     */
    public final String leaderTable() {
        return names.leader();
    }

    /** The dialect, for the lease's transactions. */
    final SqlDialect dialect() {
        return dialect;
    }

    /**
     * The database's idempotency statements ({@link SqlStore.Builder#idempotencyKeys}); default: none, and a store
     * built with idempotency keys on fails. Called once, from the constructor: it must not use the subclass's fields.
     *
     * @param table the idempotency table as it appears in SQL
     * @return the statements, or null if this store does not keep idempotency keys
     */
    protected SqlIdempotency.Statements idempotencyStatements(String table) {
        return null;
    }

    /** The idempotency keys, off unless the builder turned them on. */
    final SqlIdempotency idempotency() {
        return idempotency;
    }

    /** {@return whether the store accepts delayed messages ({@link SqlStore.Builder#scheduling})} */
    public final boolean scheduling() {
        return scheduling;
    }

    /** {@return whether the publisher numbers messages per (topic, key) ({@link SqlStore.Builder#keySequence})} */
    public final boolean keySequence() {
        return keySequence;
    }

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
     * @return the timeout set on the builder; default {@link SqlStore#DEFAULT_STATEMENT_TIMEOUT}
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
     * The decorators the publisher applies to every message, in order ({@link SqlStore.Builder#decorator}).
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
}
