package dev.outbox.store.postgres;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.spi.SqlStoreSettings;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
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
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The {@link Inbox} on PostgreSQL, on Jdbi 3 and the official JDBC driver.
 *
 * <pre>{@code
 * PostgresInbox inbox = PostgresInbox.builder(dataSource)   // or builder(jdbi)
 *         .table("inbox")                                  // default; failed messages go to "inbox_failed"
 *         .retention(Duration.ofDays(7))
 *         .build();
 * inbox.createSchema();
 * }</pre>
 *
 * <h2>Statements</h2>
 * {@link #process} runs {@code INSERT INTO inbox (consumer, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING} on
 * the caller's connection: one row inserted means the id is new and the handler runs; none means it was processed
 * before. A concurrent transaction inserting the same key makes the insert wait for it (the primary key's unique
 * check), so two consumers never both apply one message. {@link #purgeExpired()} deletes expired entries by
 * {@code ctid}, at most {@link Builder#purgeBatchSize} per statement, each batch in its own short transaction, until
 * none is left. Statements on the caller's connection carry the statement timeout as a JDBC query timeout; the
 * store's own calls set it with {@code SET LOCAL statement_timeout}.
 *
 * <p>Immutable and thread-safe.
 */
public final class PostgresInbox implements Inbox {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "inbox";
    /** The default retention: 7 days. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** The default number of entries one purge statement deletes. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = 5_000;

    static final String SCHEMA_RESOURCE = "dev/outbox/store/postgres/inbox.sql";
    private static final Logger log = LoggerFactory.getLogger(PostgresInbox.class);
    private static final SqlTableNames.Dialect TABLE_NAMES = new SqlTableNames.Dialect("Postgres", 63, '"');

    private final Jdbi jdbi;
    private final String table;
    private final String failedTable;
    private final String index;
    private final Duration retention;
    private final int purgeBatchSize;
    private final Duration statementTimeout;
    private final int queryTimeoutSeconds;
    private final String settingsSql;
    private final String insertSql;
    private final String failSql;
    private final String failedSql;
    private final String purgeSql;

    private PostgresInbox(Builder b) {
        this.jdbi = b.jdbi;
        this.table = TABLE_NAMES.names(b.schema, b.table).outbox();
        this.failedTable = TABLE_NAMES.names(b.schema, b.table + "_failed").outbox();
        this.index = '"' + b.table + "_processed_at\"";
        this.retention = b.retention;
        this.purgeBatchSize = b.purgeBatchSize;
        this.statementTimeout = b.statementTimeout;
        this.queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE, (statementTimeout.toMillis() + 999) / 1000);
        this.settingsSql = "SELECT set_config('statement_timeout', '" + statementTimeout.toMillis() + "', true)";
        this.insertSql = "INSERT INTO " + table + " (consumer, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING";
        this.failSql = "INSERT INTO " + failedTable + " (consumer, message_id, topic, partition, \"offset\", key, value,"
                + " attempts, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";
        this.failedSql = "SELECT consumer, message_id, topic, partition, \"offset\", key, value, attempts, reason,"
                + " failed_at FROM " + failedTable + " WHERE consumer = ? ORDER BY failed_at, message_id LIMIT ?";
        this.purgeSql = "DELETE FROM " + table + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + table
                + " WHERE processed_at < now() - CAST(? AS double precision) * interval '1 millisecond' LIMIT ?))";
    }

    /** Starts a builder for an inbox whose own calls (purge, listing) take connections from {@code jdbi}. */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(Objects.requireNonNull(jdbi, "jdbi must not be null"));
    }

    /** Starts a builder for an inbox whose own calls take connections from {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource must not be null")));
    }

    /** The DDL of the inbox and failed-messages tables, names filled in; idempotent. */
    public String schemaSql() {
        try (InputStream in = PostgresInbox.class.getClassLoader().getResourceAsStream(SCHEMA_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + SCHEMA_RESOURCE + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${inbox_index}", index)
                    .replace("${inbox}", table).replace("${failed}", failedTable);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + SCHEMA_RESOURCE, e);
        }
    }

    /** Creates the tables if they do not exist ({@link #schemaSql()}), in one transaction. */
    public void createSchema() {
        String ddl = schemaSql();
        inTransaction("creating the inbox schema " + table, handle -> {
            handle.createQuery("SELECT pg_advisory_xact_lock(?)").bind(0, (long) table.hashCode())
                    .mapTo(String.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(ddl);
            }
            return null;
        });
        log.info("Inbox schema ready: {} and {}", table, failedTable);
    }

    /** The inbox table as it appears in SQL. */
    public String table() {
        return table;
    }

    /** The failed-messages table as it appears in SQL. */
    public String failedTable() {
        return failedTable;
    }

    @Override
    public Duration retention() {
        return retention;
    }

    @Override
    public boolean process(Connection connection, String consumer, UUID messageId, Handler handler) {
        Objects.requireNonNull(connection, "connection must not be null");
        Inbox.validateConsumer(consumer);
        Objects.requireNonNull(messageId, "messageId must not be null");
        Objects.requireNonNull(handler, "handler must not be null");
        try (PreparedStatement insert = connection.prepareStatement(insertSql)) {
            insert.setQueryTimeout(queryTimeoutSeconds);
            insert.setString(1, consumer);
            insert.setObject(2, messageId);
            if (insert.executeUpdate() == 0) {
                log.debug("{}: message {} was processed already", consumer, messageId);
                return false;
            }
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("recording message " + messageId + " for " + consumer + " in " + table, e);
        }
        try {
            handler.handle(connection);
        } catch (Exception e) {
            throw new InboxHandlerException("the handler of " + consumer + " failed on message " + messageId, e);
        }
        return true;
    }

    @Override
    public void recordFailure(Connection connection, FailedMessage failed) {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(failed, "failed must not be null");
        try (PreparedStatement insert = connection.prepareStatement(failSql)) {
            insert.setQueryTimeout(queryTimeoutSeconds);
            insert.setString(1, failed.consumer());
            insert.setObject(2, failed.messageId());
            insert.setString(3, failed.topic().replace("\u0000", ""));
            insert.setInt(4, failed.partition());
            insert.setLong(5, failed.offset());
            insert.setString(6, failed.key() == null ? null : failed.key().replace("\u0000", "\\u0000"));
            insert.setBytes(7, failed.value());
            insert.setInt(8, failed.attempts());
            insert.setString(9, failed.reason().replace("\u0000", "\\u0000"));
            insert.executeUpdate();
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("recording failed message " + failed.messageId() + " in " + failedTable, e);
        }
    }

    @Override
    public List<FailedMessage> failed(String consumer, int limit) {
        Inbox.validateConsumer(consumer);
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return inTransaction("listing failed messages of " + consumer, handle ->
                handle.createQuery(failedSql).bind(0, consumer).bind(1, limit).map((rs, ctx) -> {
                    OffsetDateTime at = rs.getObject(10, OffsetDateTime.class);
                    return new FailedMessage(rs.getString(1), rs.getObject(2, UUID.class), rs.getString(3),
                            rs.getInt(4), rs.getLong(5), rs.getString(6), rs.getBytes(7), rs.getInt(8),
                            rs.getString(9), at == null ? null : at.toInstant());
                }).list());
    }

    @Override
    public int purgeExpired() {
        int total = 0;
        while (true) {
            int deleted = inTransaction("purging expired entries of " + table, handle ->
                    handle.createUpdate(purgeSql).bind(0, retention.toMillis()).bind(1, purgeBatchSize).execute());
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
        return "PostgresInbox{table=" + table + ", retention=" + retention + '}';
    }

    private <T> T inTransaction(String operation, HandleCallback<T, SQLException> work) {
        try (Handle handle = jdbi.open()) {
            return handle.inTransaction(h -> {
                h.createQuery(settingsSql).mapTo(String.class).one();
                return work.withHandle(h);
            });
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw PostgresDialect.ERRORS.translate(operation, e);
        }
    }

    /** Configures a {@link PostgresInbox}. Not thread-safe; every setter rejects a bad value, naming it. */
    public static final class Builder {
        private final Jdbi jdbi;
        private String schema;
        private String table = DEFAULT_TABLE;
        private Duration retention = DEFAULT_RETENTION;
        private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;
        private Duration statementTimeout = PostgresStore.DEFAULT_STATEMENT_TIMEOUT;

        private Builder(Jdbi jdbi) {
            this.jdbi = jdbi;
        }

        /** The schema of the inbox tables; default none (the {@code search_path}). */
        public Builder schema(String schema) {
            this.schema = TABLE_NAMES.validateSchema(schema);
            return this;
        }

        /**
         * The inbox table's name; failed messages go to the same name with {@code _failed} appended. Default
         * {@value PostgresInbox#DEFAULT_TABLE}; lower-case letters, digits and underscores, at most 49 characters.
         */
        public Builder table(String table) {
            TABLE_NAMES.validateTable(table == null ? null : table + "_failed");
            this.table = TABLE_NAMES.validateTable(table);
            return this;
        }

        /** How long an entry is kept ({@link Inbox#retention()}); default 7 days, at least 1 minute. */
        public Builder retention(Duration retention) {
            Objects.requireNonNull(retention, "retention must not be null");
            if (retention.compareTo(Duration.ofMinutes(1)) < 0) {
                throw new IllegalArgumentException("retention must be at least 1 minute: " + retention);
            }
            this.retention = retention;
            return this;
        }

        /** The most entries one purge statement deletes; default 5,000, at least 1. */
        public Builder purgeBatchSize(int purgeBatchSize) {
            if (purgeBatchSize < 1) {
                throw new IllegalArgumentException("purgeBatchSize must be at least 1: " + purgeBatchSize);
            }
            this.purgeBatchSize = purgeBatchSize;
            return this;
        }

        /** The longest any statement may take; default 30 s. */
        public Builder statementTimeout(Duration statementTimeout) {
            this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
            return this;
        }

        public PostgresInbox build() {
            return new PostgresInbox(this);
        }
    }
}
