package dev.outbox.store.mysql;

import dev.outbox.FailedMessage;
import dev.outbox.Inbox;
import dev.outbox.InboxHandlerException;
import dev.outbox.spi.SqlStoreSettings;
import dev.outbox.spi.SqlTableNames;
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
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The {@link Inbox} on MySQL 8.0 or MariaDB 10.6 and newer (InnoDB), on Jdbi 3 and MySQL Connector/J.
 *
 * <pre>{@code
 * MySqlInbox inbox = MySqlInbox.builder(dataSource)   // or builder(jdbi)
 *         .table("inbox")                            // default; failed messages go to "inbox_failed"
 *         .retention(Duration.ofDays(7))
 *         .build();
 * inbox.createSchema();
 * }</pre>
 *
 * <h2>Statements</h2>
 * {@link #process} runs a plain {@code INSERT INTO inbox (consumer, message_id) VALUES (?, ?)} on the caller's
 * connection: a duplicate-key error (1062) means the id was processed before — InnoDB rolls back only that
 * statement, so the caller's transaction carries on — and anything else is a failure. ({@code INSERT IGNORE} would
 * also turn other errors into warnings; {@code ON DUPLICATE KEY UPDATE} reports one row either way with
 * Connector/J's default {@code useAffectedRows=false}.) A concurrent transaction inserting the same key makes the
 * insert wait for it. {@link #purgeExpired()} runs {@code DELETE ... WHERE processed_at < ... ORDER BY processed_at
 * LIMIT n} (through the {@code processed_at} index), each batch committed on its own, until none is left. Every
 * statement carries the statement timeout as a JDBC query timeout.
 *
 * <p>Immutable and thread-safe.
 */
public final class MySqlInbox implements Inbox {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "inbox";
    /** The default retention: 7 days. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** The default number of entries one purge statement deletes. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = 5_000;

    static final String SCHEMA_RESOURCE = "dev/outbox/store/mysql/inbox.sql";
    private static final int DUPLICATE_KEY = 1062;
    private static final Logger log = LoggerFactory.getLogger(MySqlInbox.class);
    private static final SqlTableNames.Dialect TABLE_NAMES = new SqlTableNames.Dialect("MySQL", 64, '`');

    private final Jdbi jdbi;
    private final String table;
    private final String failedTable;
    private final Duration retention;
    private final int purgeBatchSize;
    private final int queryTimeoutSeconds;
    private final String insertSql;
    private final String failSql;
    private final String failedSql;
    private final String purgeSql;

    private MySqlInbox(Builder b) {
        this.jdbi = b.jdbi;
        this.table = TABLE_NAMES.names(b.schema, b.table).outbox();
        this.failedTable = TABLE_NAMES.names(b.schema, b.table + "_failed").outbox();
        this.retention = b.retention;
        this.purgeBatchSize = b.purgeBatchSize;
        this.queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE, (b.statementTimeout.toMillis() + 999) / 1000);
        this.insertSql = "INSERT INTO " + table + " (consumer, message_id) VALUES (?, ?)";
        this.failSql = "INSERT INTO " + failedTable + " (consumer, message_id, topic, `partition`, `offset`, `key`,"
                + " value, attempts, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                + " ON DUPLICATE KEY UPDATE consumer = consumer";
        this.failedSql = "SELECT consumer, message_id, topic, `partition`, `offset`, `key`, value, attempts, reason,"
                + " UNIX_TIMESTAMP(failed_at) FROM " + failedTable + " WHERE consumer = ?"
                + " ORDER BY failed_at, message_id LIMIT ?";
        this.purgeSql = "DELETE FROM " + table + " WHERE processed_at < NOW(6) - INTERVAL ? MICROSECOND"
                + " ORDER BY processed_at LIMIT ?";
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
        try (InputStream in = MySqlInbox.class.getClassLoader().getResourceAsStream(SCHEMA_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + SCHEMA_RESOURCE + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${inbox}", table)
                    .replace("${failed}", failedTable);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + SCHEMA_RESOURCE, e);
        }
    }

    /** Creates the tables if they do not exist ({@link #schemaSql()}), one after the other. */
    public void createSchema() {
        List<String> statements = MySqlStore.statements(schemaSql());
        withHandle("creating the inbox schema " + table, handle -> {
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.setQueryTimeout(queryTimeoutSeconds);
                for (String sql : statements) {
                    statement.execute(sql);
                }
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
            insert.setBytes(2, RowReader.bytes(messageId));
            insert.executeUpdate();
        } catch (SQLException e) {
            if (e.getErrorCode() == DUPLICATE_KEY) {
                log.debug("{}: message {} was processed already", consumer, messageId);
                return false;
            }
            throw MySqlDialect.ERRORS.translate("recording message " + messageId + " for " + consumer + " in " + table, e);
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
            insert.setBytes(2, RowReader.bytes(failed.messageId()));
            insert.setString(3, failed.topic());
            insert.setInt(4, failed.partition());
            insert.setLong(5, failed.offset());
            insert.setString(6, failed.key());
            insert.setBytes(7, failed.value());
            insert.setInt(8, failed.attempts());
            insert.setString(9, failed.reason().length() > MySqlStore.MAX_REASON_LENGTH
                    ? failed.reason().substring(0, MySqlStore.MAX_REASON_LENGTH) + "…" : failed.reason());
            insert.executeUpdate();
        } catch (SQLException e) {
            throw MySqlDialect.ERRORS.translate("recording failed message " + failed.messageId() + " in " + failedTable, e);
        }
    }

    @Override
    public List<FailedMessage> failed(String consumer, int limit) {
        Inbox.validateConsumer(consumer);
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return withHandle("listing failed messages of " + consumer, handle ->
                handle.createQuery(failedSql).setQueryTimeout(queryTimeoutSeconds).bind(0, consumer).bind(1, limit)
                        .map((rs, ctx) -> new FailedMessage(rs.getString(1), RowReader.uuid(rs.getBytes(2)),
                                rs.getString(3), rs.getInt(4), rs.getLong(5), rs.getString(6), rs.getBytes(7),
                                rs.getInt(8), rs.getString(9), RowReader.instant(rs.getBigDecimal(10)))).list());
    }

    @Override
    public int purgeExpired() {
        int total = 0;
        while (true) {
            // Auto-commit: each batch is a transaction of its own.
            int deleted = withHandle("purging expired entries of " + table, handle ->
                    handle.createUpdate(purgeSql).setQueryTimeout(queryTimeoutSeconds)
                            .bind(0, retention.toNanos() / 1000).bind(1, purgeBatchSize).execute());
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
        return "MySqlInbox{table=" + table + ", retention=" + retention + '}';
    }

    private <T> T withHandle(String operation, HandleCallback<T, SQLException> work) {
        try (Handle handle = jdbi.open()) {
            return work.withHandle(handle);
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw MySqlDialect.ERRORS.translate(operation, e);
        }
    }

    /** Configures a {@link MySqlInbox}. Not thread-safe; every setter rejects a bad value, naming it. */
    public static final class Builder {
        private final Jdbi jdbi;
        private String schema;
        private String table = DEFAULT_TABLE;
        private Duration retention = DEFAULT_RETENTION;
        private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;
        private Duration statementTimeout = MySqlStore.DEFAULT_STATEMENT_TIMEOUT;

        private Builder(Jdbi jdbi) {
            this.jdbi = jdbi;
        }

        /** The database of the inbox tables; default none (the connection's database). */
        public Builder schema(String schema) {
            this.schema = TABLE_NAMES.validateSchema(schema);
            return this;
        }

        /**
         * The inbox table's name; failed messages go to the same name with {@code _failed} appended. Default
         * {@value MySqlInbox#DEFAULT_TABLE}; lower-case letters, digits and underscores, at most 50 characters.
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

        /** The longest any statement may take; default 30 s (whole seconds, rounded up). */
        public Builder statementTimeout(Duration statementTimeout) {
            this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
            return this;
        }

        public MySqlInbox build() {
            return new MySqlInbox(this);
        }
    }
}
