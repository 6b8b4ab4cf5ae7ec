package dev.outbox.store.mysql;

import dev.outbox.Inbox;
import dev.outbox.store.sql.SqlInbox;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;

import javax.sql.DataSource;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
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
 * statement carries the statement timeout as a JDBC query timeout. The calls themselves are shared with
 * {@code PostgresInbox} in {@link SqlInbox}.
 *
 * <p>Immutable and thread-safe.
 */
public final class MySqlInbox extends SqlInbox {
    /** The default table name. */
    public static final String DEFAULT_TABLE = SqlInbox.DEFAULT_TABLE;
    /** The default retention: 7 days. */
    public static final Duration DEFAULT_RETENTION = SqlInbox.DEFAULT_RETENTION;
    /** The default number of entries one purge statement deletes. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = SqlInbox.DEFAULT_PURGE_BATCH_SIZE;

    static final String SCHEMA_RESOURCE = "dev/outbox/store/mysql/inbox.sql";
    private static final int DUPLICATE_KEY = 1062;
    private static final Statements STATEMENTS = new Statements(SCHEMA_RESOURCE,
            "INSERT INTO ${inbox} (consumer, message_id) VALUES (?, ?)",
            "INSERT INTO ${failed} (consumer, message_id, topic, `partition`, `offset`, `key`, value, attempts, reason)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE consumer = consumer",
            "SELECT consumer, message_id, topic, `partition`, `offset`, `key`, value, attempts, reason,"
                    + " UNIX_TIMESTAMP(failed_at) FROM ${failed} WHERE consumer = ? ORDER BY failed_at, message_id"
                    + " LIMIT ?",
            "SELECT consumer, message_id, topic, `partition`, `offset`, `key`, value, attempts, reason,"
                    + " UNIX_TIMESTAMP(failed_at) FROM ${failed} WHERE consumer = ? AND message_id = ?",
            "SELECT DISTINCT consumer FROM ${failed} ORDER BY consumer LIMIT ?",
            "DELETE FROM ${inbox} WHERE processed_at < NOW(6) - INTERVAL ? MICROSECOND ORDER BY processed_at LIMIT ?");

    private MySqlInbox(Builder b) {
        super(b, STATEMENTS);
    }

    /**
     * Starts a builder for an inbox whose own calls (purge, listing) take connections from {@code jdbi}.
     *
     * @param jdbi the connections of the inbox's own calls; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code jdbi} is null
     */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(Objects.requireNonNull(jdbi, "jdbi must not be null"));
    }

    /**
     * Starts a builder for an inbox whose own calls take connections from {@code dataSource}; use a pooling one.
     *
     * @param dataSource the database of the inbox's own calls; not null
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code dataSource} is null
     */

    public static Builder builder(DataSource dataSource) {
        return new Builder(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource must not be null")));
    }

    /** Creates the tables if they do not exist ({@link #schemaSql()}), one after the other. */
    @Override
    public void createSchema() {
        List<String> statements = MySqlSchema.statements(schemaSql());
        call("creating the inbox schema " + table(), handle -> {
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.setQueryTimeout(queryTimeoutSeconds());
                for (String sql : statements) {
                    statement.execute(sql);
                }
            }
            return null;
        });
        log.info("Inbox schema ready: {} and {}", table(), failedTable());
    }

    @Override
    protected void bindId(PreparedStatement statement, int index, UUID id) throws SQLException {
        statement.setBytes(index, RowReader.bytes(id));
    }

    @Override
    protected UUID readId(ResultSet rs, int column) throws SQLException {
        return RowReader.uuid(rs.getBytes(column));
    }

    @Override
    protected Instant readInstant(ResultSet rs, int column) throws SQLException {
        return RowReader.instant(rs.getBigDecimal(column));
    }

    /**
     * A plain insert: a duplicate-key error means the id was there. InnoDB rolls back only that statement, so the
     * caller's transaction carries on.
     */
    @Override
    protected boolean inserted(PreparedStatement insert) throws SQLException {
        try {
            insert.executeUpdate();
            return true;
        } catch (SQLException e) {
            if (e.getErrorCode() == DUPLICATE_KEY) {
                return false;
            }
            throw e;
        }
    }

    /** The reason is cut to what its column holds. */
    @Override
    protected String text(String column, String value) {
        return column.equals("reason") && value.length() > MySqlColumns.MAX_REASON_LENGTH
                ? value.substring(0, MySqlColumns.MAX_REASON_LENGTH) + "…" : value;
    }

    /** Auto-commit: each call (each purge batch) is a transaction of its own. */
    @Override
    protected <T> T call(String operation, HandleCallback<T, SQLException> work) {
        try (Handle handle = jdbi().open()) {
            return work.withHandle(handle);
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw errors().translate(operation, e);
        }
    }

    /**
     * Configures a {@link MySqlInbox}: {@link #schema}, {@link #table}, {@link #retention}, {@link #purgeBatchSize}
     * and {@link #statementTimeout}. Not thread-safe; every setter rejects a bad value, naming it.
     */
    public static final class Builder extends SqlInbox.Builder<Builder, MySqlInbox> {
        private Builder(Jdbi jdbi) {
            super(jdbi, MySqlDialect.DIALECT, MySqlInbox::new);
        }
    }
}
