package dev.outbox.store.sql;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.spi.SqlStoreSettings;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/**
 * What the SQL inboxes share: the builder's settings, the table names, the DDL template, the timeouts, and the
 * {@link Inbox} calls themselves, with their statements held as data ({@link Statements}). Each inbox
 * ({@code PostgresInbox}, {@code MySqlInbox}) says how its database binds and reads a message id, tells a new entry
 * from one processed before, cleans text for its columns and opens a handle for the inbox's own calls.
 *
 * <p>For inbox implementations, not for applications. Subclasses are immutable and thread-safe.
 */
public abstract class SqlInbox implements Inbox {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "inbox";
    /** What is appended to the table name to name the failed-messages table. */
    public static final String FAILED_SUFFIX = "_failed";
    /** The default retention: 7 days. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** The default number of entries one purge statement deletes. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = 5_000;

    /**
     * One database's inbox statements, with {@code ${inbox}} and {@code ${failed}} standing for the quoted table
     * names. Immutable and thread-safe.
     *
     * @param schemaResource class-path resource of the DDL template
     * @param insert         records (consumer, message id) in the inbox
     * @param fail           records a failed message: consumer, message id, topic, partition, offset, key, value,
     *                       attempts, reason; a second one of the same (consumer, message id) changes nothing
     * @param failed         lists a consumer's failed messages: the same columns then the failure time, for a
     *                       consumer and a limit
     * @param failedMessage  reads one failed message, the same columns as {@code failed}, for a consumer and a
     *                       message id
     * @param failedConsumers lists the consumers having failed messages, each once, by name, for a limit
     * @param purge          deletes at most a limit of entries processed longer ago than an age in microseconds
     *                       (parameters: the age, the limit)
     */
    public record Statements(String schemaResource, String insert, String fail, String failed, String failedMessage,
                             String failedConsumers, String purge) {
        /**
         * Checks the components; see the record's description for what each holds.
         *
         * @param schemaResource  the DDL template's class-path resource; not null
         * @param insert          the insert of an entry; not null
         * @param fail            the insert of a failed message; not null
         * @param failed          the listing of a consumer's failed messages; not null
         * @param failedMessage   the read of one failed message; not null
         * @param failedConsumers the listing of consumers with failed messages; not null
         * @param purge           the purge of expired entries; not null
         * @throws NullPointerException if a component is null
         */
        public Statements {
            Objects.requireNonNull(schemaResource, "schemaResource must not be null");
            Objects.requireNonNull(insert, "insert must not be null");
            Objects.requireNonNull(fail, "fail must not be null");
            Objects.requireNonNull(failed, "failed must not be null");
            Objects.requireNonNull(failedMessage, "failedMessage must not be null");
            Objects.requireNonNull(failedConsumers, "failedConsumers must not be null");
            Objects.requireNonNull(purge, "purge must not be null");
        }
    }

    /** The inbox's logger, named after the concrete inbox. */
    protected final Logger log = LoggerFactory.getLogger(getClass());
    private final SqlDialect dialect;
    private final String schemaResource;
    private final Jdbi jdbi;
    private final String tableName;
    private final String table;
    private final String failedTable;
    private final Duration retention;
    private final int purgeBatchSize;
    private final Duration statementTimeout;
    private final int queryTimeoutSeconds;
    private final String insertSql;
    private final String failSql;
    private final String failedSql;
    private final String failedMessageSql;
    private final String failedConsumersSql;
    private final String purgeSql;

    /**
     * Takes the builder's settings (each validated by the builder) and the database's statements.
     *
     * @param builder    the settings; read here, so later changes to the builder do not reach this inbox
     * @param statements the database's statements, with {@code ${inbox}} and {@code ${failed}} still in them; not
     *                   null
     * @throws NullPointerException if {@code statements} is null
     */
    protected SqlInbox(Builder<?, ?> builder, Statements statements) {
        Objects.requireNonNull(statements, "statements must not be null");
        this.dialect = builder.dialect;
        this.jdbi = builder.jdbi;
        this.tableName = builder.table;
        this.table = dialect.tableNames().names(builder.schema, builder.table).outbox();
        this.failedTable = dialect.tableNames().names(builder.schema, builder.table + FAILED_SUFFIX).outbox();
        this.retention = builder.retention;
        this.purgeBatchSize = builder.purgeBatchSize;
        this.statementTimeout = builder.statementTimeout;
        this.queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE, (statementTimeout.toMillis() + 999) / 1000);
        this.schemaResource = statements.schemaResource();
        this.insertSql = names(statements.insert());
        this.failSql = names(statements.fail());
        this.failedSql = names(statements.failed());
        this.failedMessageSql = names(statements.failedMessage());
        this.failedConsumersSql = names(statements.failedConsumers());
        this.purgeSql = names(statements.purge());
    }

    private String names(String template) {
        return template.replace("${inbox}", table).replace("${failed}", failedTable);
    }

    /**
     * The inbox table as it appears in SQL.
     *
     * @return the quoted, possibly schema-qualified name
     */
    public final String table() {
        return table;
    }

    /**
     * The failed-messages table as it appears in SQL.
     *
     * @return the quoted, possibly schema-qualified name
     */
    public final String failedTable() {
        return failedTable;
    }

    /**
     * The inbox table's configured name, unquoted and without its schema (to name an index after it, say).
     *
     * @return the bare name; default {@value #DEFAULT_TABLE}
     */
    protected final String tableName() {
        return tableName;
    }

    @Override
    public final Duration retention() {
        return retention;
    }

    /**
     * The statement timeout.
     *
     * @return the timeout set on the builder; default 30 s
     */
    protected final Duration statementTimeout() {
        return statementTimeout;
    }

    /**
     * The statement timeout in whole seconds, rounded up, for JDBC query timeouts.
     *
     * @return the timeout in seconds, at least 1
     */
    protected final int queryTimeoutSeconds() {
        return queryTimeoutSeconds;
    }

    /**
     * The DDL of the inbox and failed-messages tables, names filled in; idempotent.
     *
     * @return the DDL, from the class-path resource of {@link Statements#schemaResource()}
     * @throws IllegalStateException if the resource is missing
     * @throws UncheckedIOException  if it cannot be read
     */
    public String schemaSql() {
        try (InputStream in = SqlInbox.class.getClassLoader().getResourceAsStream(schemaResource)) {
            if (in == null) {
                throw new IllegalStateException("resource " + schemaResource + " is missing from the classpath");
            }
            return names(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + schemaResource, e);
        }
    }

    /** Creates the tables if they do not exist ({@link #schemaSql()}). */
    public abstract void createSchema();

    @Override
    public final boolean process(Connection connection, String consumer, UUID messageId, Handler handler) {
        Objects.requireNonNull(connection, "connection must not be null");
        Inbox.validateConsumer(consumer);
        Objects.requireNonNull(messageId, "messageId must not be null");
        Objects.requireNonNull(handler, "handler must not be null");
        try (PreparedStatement insert = connection.prepareStatement(insertSql)) {
            insert.setQueryTimeout(queryTimeoutSeconds);
            insert.setString(1, consumer);
            bindId(insert, 2, messageId);
            if (!inserted(insert)) {
                log.debug("{}: message {} was processed already", consumer, messageId);
                return false;
            }
        } catch (SQLException e) {
            throw dialect.errors().translate("recording message " + messageId + " for " + consumer + " in " + table,
                    e);
        }
        try {
            handler.handle(connection);
        } catch (Exception e) {
            throw new InboxHandlerException("the handler of " + consumer + " failed on message " + messageId, e);
        }
        return true;
    }

    @Override
    public final void recordFailure(Connection connection, FailedMessage failed) {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(failed, "failed must not be null");
        try (PreparedStatement insert = connection.prepareStatement(failSql)) {
            insert.setQueryTimeout(queryTimeoutSeconds);
            insert.setString(1, failed.consumer());
            bindId(insert, 2, failed.messageId());
            insert.setString(3, text("topic", failed.topic()));
            insert.setInt(4, failed.partition());
            insert.setLong(5, failed.offset());
            insert.setString(6, failed.key() == null ? null : text("key", failed.key()));
            insert.setBytes(7, failed.value());
            insert.setInt(8, failed.attempts());
            insert.setString(9, text("reason", failed.reason()));
            insert.executeUpdate();
        } catch (SQLException e) {
            throw dialect.errors().translate("recording failed message " + failed.messageId() + " in "
                    + failedTable, e);
        }
    }

    @Override
    public final List<FailedMessage> failed(String consumer, int limit) {
        Inbox.validateConsumer(consumer);
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return call("listing failed messages of " + consumer, handle ->
                handle.createQuery(failedSql).setQueryTimeout(queryTimeoutSeconds).bind(0, consumer).bind(1, limit)
                        .map((rs, ctx) -> failedMessage(rs)).list());
    }

    @Override
    public final List<String> failedConsumers(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return call("listing the consumers with failed messages in " + failedTable, handle ->
                handle.createQuery(failedConsumersSql).setQueryTimeout(queryTimeoutSeconds).bind(0, limit)
                        .mapTo(String.class).list());
    }

    @Override
    public final Optional<FailedMessage> failedMessage(String consumer, UUID messageId) {
        Inbox.validateConsumer(consumer);
        Objects.requireNonNull(messageId, "messageId must not be null");
        return call("reading failed message " + messageId + " of " + consumer, handle -> {
            try (PreparedStatement select = handle.getConnection().prepareStatement(failedMessageSql)) {
                select.setQueryTimeout(queryTimeoutSeconds);
                select.setString(1, consumer);
                bindId(select, 2, messageId);
                try (ResultSet rs = select.executeQuery()) {
                    return rs.next() ? Optional.of(failedMessage(rs)) : Optional.<FailedMessage>empty();
                }
            }
        });
    }

    /** The failed message of the current row: the columns of {@link Statements#failed}, in their order. */
    private FailedMessage failedMessage(ResultSet rs) throws SQLException {
        return new FailedMessage(rs.getString(1), readId(rs, 2), rs.getString(3), rs.getInt(4), rs.getLong(5),
                rs.getString(6), rs.getBytes(7), rs.getInt(8), rs.getString(9), readInstant(rs, 10));
    }

    @Override
    public final int purgeExpired() {
        long ageMicros = retention.toNanos() / 1000;
        int total = 0;
        while (true) {
            int deleted = call("purging expired entries of " + table, handle ->
                    handle.createUpdate(purgeSql).setQueryTimeout(queryTimeoutSeconds).bind(0, ageMicros)
                            .bind(1, purgeBatchSize).execute());
            total += deleted;
            if (deleted < purgeBatchSize) {
                if (total > 0) {
                    log.debug("Purged {} inbox entries older than {} from {}", total, retention, table);
                }
                return total;
            }
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{table=" + table + ", retention=" + retention + '}';
    }

    /**
     * Binds a message id as the database stores it.
     *
     * @param statement the statement to bind
     * @param index     the parameter's index, from 1
     * @param id        the message id; not null
     * @throws SQLException as the driver throws it
     */
    protected abstract void bindId(PreparedStatement statement, int index, UUID id) throws SQLException;

    /**
     * Reads a message id as the database stores it.
     *
     * @param rs     the result set, on a row
     * @param column the column's index, from 1
     * @return the message id
     * @throws SQLException as the driver throws it
     */
    protected abstract UUID readId(ResultSet rs, int column) throws SQLException;

    /**
     * Reads a time stamp column of the failed-messages listing (null stays null).
     *
     * @param rs     the result set, on a row
     * @param column the column's index, from 1
     * @return the time, or null for SQL NULL
     * @throws SQLException as the driver throws it
     */
    protected abstract Instant readInstant(ResultSet rs, int column) throws SQLException;

    /**
     * Runs the prepared {@link Statements#insert} (parameters bound): whether it recorded a new entry (true) or found
     * the id processed before (false). Any other failure is thrown.
     *
     * @param insert the insert, its parameters bound; the caller closes it
     * @return true for a new entry, false for a message id this consumer processed before
     * @throws SQLException for any failure other than a duplicate entry
     */
    protected abstract boolean inserted(PreparedStatement insert) throws SQLException;

    /**
     * {@code value} made fit for the failed-messages table's {@code column} (topic, key or reason); not null.
     *
     * @param column the column's name, {@code "topic"}, {@code "key"} or {@code "reason"}
     * @param value  the text; not null
     * @return the text as the column can store it (cut, or with characters replaced)
     */
    protected abstract String text(String column, String value);

    /**
     * Runs one of the inbox's own calls on a connection of its own (auto-commit, or one short transaction), with the
     * statement timeout, translating a failure into a {@link dev.outbox.spi.StoreException} that names
     * {@code operation}.
     *
     * @param <T>       the call's result
     * @param operation what the call does, as a failure's message names it
     * @param work      the call's work on the handle
     * @return what {@code work} returned
     * @throws dev.outbox.spi.StoreException if the call fails
     */
    protected abstract <T> T call(String operation, HandleCallback<T, SQLException> work);

    /**
     * The database's errors, to translate failures of subclass calls.
     *
     * @return the dialect's error classification
     */
    protected final SqlErrors errors() {
        return dialect.errors();
    }

    /**
     * The jdbi the inbox's own calls take their connections from.
     *
     * @return the builder's Jdbi
     */
    protected final Jdbi jdbi() {
        return jdbi;
    }

    /**
     * The settings every SQL inbox has. Not thread-safe; {@code build()} returns an immutable inbox. Every setter
     * rejects a bad value at once, naming it.
     *
     * @param <B> the inbox's own builder
     * @param <I> the inbox
     */
    @SuppressWarnings("unchecked") // B is the concrete builder itself
    public abstract static class Builder<B extends Builder<B, I>, I extends SqlInbox> {
        private final Jdbi jdbi;
        private final SqlDialect dialect;
        private final Function<B, I> inbox;
        private String schema;
        private String table = DEFAULT_TABLE;
        private Duration retention = DEFAULT_RETENTION;
        private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;
        private Duration statementTimeout = SqlStore.DEFAULT_STATEMENT_TIMEOUT;

        /**
         * @param jdbi    where the inbox's own calls (purge, listing) take their connections
         * @param dialect what the inbox's database differs in (table names, errors)
         * @param inbox   builds the inbox from this builder
         */
        protected Builder(Jdbi jdbi, SqlDialect dialect, Function<B, I> inbox) {
            this.jdbi = Objects.requireNonNull(jdbi, "jdbi must not be null");
            this.dialect = Objects.requireNonNull(dialect, "dialect must not be null");
            this.inbox = Objects.requireNonNull(inbox, "inbox must not be null");
        }

        /**
         * The schema (MySQL: the database) of the inbox tables; default none (Postgres' {@code search_path}, MySQL's
         * current database).
         *
         * @param schema the schema's bare name
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is null, empty, too long or not a valid name
         */
        public final B schema(String schema) {
            this.schema = dialect.tableNames().validateSchema(schema);
            return (B) this;
        }

        /**
         * The inbox table's name; failed messages go to the same name with {@value SqlInbox#FAILED_SUFFIX} appended.
         * Default {@value SqlInbox#DEFAULT_TABLE}; lower-case letters, digits and underscores, short enough for the
         * failed table's name to fit the database's identifier limit (at most 49 characters in Postgres, 50 in
         * MySQL).
         *
         * @param table the inbox table's bare name
         * @return this builder
         * @throws IllegalArgumentException naming the value if it is null, empty, too long (with the suffix) or not
         *                                  a valid name
         */
        public final B table(String table) {
            dialect.tableNames().validateTable(table == null ? null : table + FAILED_SUFFIX);
            this.table = dialect.tableNames().validateTable(table);
            return (B) this;
        }

        /**
         * How long an entry is kept ({@link Inbox#retention()}); default 7 days, at least 1 minute.
         *
         * @param retention the retention; not null
         * @return this builder
         * @throws NullPointerException     if {@code retention} is null
         * @throws IllegalArgumentException if it is below 1 minute
         */
        public final B retention(Duration retention) {
            Objects.requireNonNull(retention, "retention must not be null");
            if (retention.compareTo(Duration.ofMinutes(1)) < 0) {
                throw new IllegalArgumentException("retention must be at least 1 minute: " + retention);
            }
            this.retention = retention;
            return (B) this;
        }

        /**
         * The most entries one purge statement deletes; default 5,000, at least 1. {@link #purgeExpired()} runs
         * statements until one deletes fewer.
         *
         * @param purgeBatchSize the batch size
         * @return this builder
         * @throws IllegalArgumentException if it is below 1
         */
        public final B purgeBatchSize(int purgeBatchSize) {
            if (purgeBatchSize < 1) {
                throw new IllegalArgumentException("purgeBatchSize must be at least 1: " + purgeBatchSize);
            }
            this.purgeBatchSize = purgeBatchSize;
            return (B) this;
        }

        /**
         * The longest any statement may take; default 30 s, at least 1 ms. Where it is applied as a JDBC query
         * timeout, it is rounded up to whole seconds.
         *
         * @param statementTimeout the timeout; not null, at least 1 ms, at most {@code Integer.MAX_VALUE / 2} ms
         * @return this builder
         * @throws NullPointerException     if {@code statementTimeout} is null
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public final B statementTimeout(Duration statementTimeout) {
            this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
            return (B) this;
        }

        /**
         * The inbox, immutable and thread-safe.
         *
         * @return a new inbox with the settings as set so far
         */

        public final I build() {
            return inbox.apply((B) this);
        }
    }
}
