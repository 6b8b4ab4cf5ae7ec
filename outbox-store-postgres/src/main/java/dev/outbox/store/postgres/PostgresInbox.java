package dev.outbox.store.postgres;

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
import java.time.OffsetDateTime;
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
 * none is left. Every statement carries the statement timeout as a JDBC query timeout; the inbox's own calls also
 * set it with {@code SET LOCAL statement_timeout}. The calls themselves are shared with {@code MySqlInbox} in
 * {@link SqlInbox}.
 *
 * <p>Immutable and thread-safe.
 */
public final class PostgresInbox extends SqlInbox {
    /** The default table name. */
    public static final String DEFAULT_TABLE = SqlInbox.DEFAULT_TABLE;
    /** The default retention: 7 days. */
    public static final Duration DEFAULT_RETENTION = SqlInbox.DEFAULT_RETENTION;
    /** The default number of entries one purge statement deletes. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = SqlInbox.DEFAULT_PURGE_BATCH_SIZE;

    static final String SCHEMA_RESOURCE = "dev/outbox/store/postgres/inbox.sql";
    private static final Statements STATEMENTS = new Statements(SCHEMA_RESOURCE,
            "INSERT INTO ${inbox} (consumer, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            "INSERT INTO ${failed} (consumer, message_id, topic, partition, \"offset\", key, value, attempts, reason)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            "SELECT consumer, message_id, topic, partition, \"offset\", key, value, attempts, reason, failed_at"
                    + " FROM ${failed} WHERE consumer = ? ORDER BY failed_at, message_id LIMIT ?",
            "SELECT consumer, message_id, topic, partition, \"offset\", key, value, attempts, reason, failed_at"
                    + " FROM ${failed} WHERE consumer = ? AND message_id = ?",
            "SELECT DISTINCT consumer FROM ${failed} ORDER BY consumer LIMIT ?",
            "DELETE FROM ${inbox} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${inbox}"
                    + " WHERE processed_at < now() - CAST(? AS double precision) * interval '1 microsecond' LIMIT ?))");

    private final String index;
    private final String settingsSql;

    private PostgresInbox(Builder b) {
        super(b, STATEMENTS);
        this.index = '"' + tableName() + "_processed_at\"";
        this.settingsSql = "SELECT set_config('statement_timeout', '" + statementTimeout().toMillis() + "', true)";
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

    /** The DDL of the inbox and failed-messages tables, names filled in; idempotent. */
    @Override
    public String schemaSql() {
        return super.schemaSql().replace("${inbox_index}", index);
    }

    /** Creates the tables if they do not exist ({@link #schemaSql()}), in one transaction. */
    @Override
    public void createSchema() {
        String ddl = schemaSql();
        call("creating the inbox schema " + table(), handle -> {
            handle.createQuery("SELECT pg_advisory_xact_lock(?)").bind(0, (long) table().hashCode())
                    .mapTo(String.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(ddl);
            }
            return null;
        });
        log.info("Inbox schema ready: {} and {}", table(), failedTable());
    }

    @Override
    protected void bindId(PreparedStatement statement, int index, UUID id) throws SQLException {
        statement.setObject(index, id);
    }

    @Override
    protected UUID readId(ResultSet rs, int column) throws SQLException {
        return rs.getObject(column, UUID.class);
    }

    @Override
    protected Instant readInstant(ResultSet rs, int column) throws SQLException {
        OffsetDateTime at = rs.getObject(column, OffsetDateTime.class);
        return at == null ? null : at.toInstant();
    }

    /** {@code ON CONFLICT DO NOTHING}: no row inserted means the id was there. */
    @Override
    protected boolean inserted(PreparedStatement insert) throws SQLException {
        return insert.executeUpdate() > 0;
    }

    /** Postgres text cannot hold NUL: a topic has none (Kafka forbids it); elsewhere it is escaped. */
    @Override
    protected String text(String column, String value) {
        return value.replace("\u0000", column.equals("topic") ? "" : "\\u0000");
    }

    @Override
    protected <T> T call(String operation, HandleCallback<T, SQLException> work) {
        try (Handle handle = jdbi().open()) {
            return handle.inTransaction(h -> {
                h.createQuery(settingsSql).mapTo(String.class).one();
                return work.withHandle(h);
            });
        } catch (SQLException | JdbiException | IllegalStateException e) {
            throw errors().translate(operation, e);
        }
    }

    /**
     * Configures a {@link PostgresInbox}: {@link #schema}, {@link #table}, {@link #retention},
     * {@link #purgeBatchSize} and {@link #statementTimeout}. Not thread-safe; every setter rejects a bad value, naming
     * it.
     */
    public static final class Builder extends SqlInbox.Builder<Builder, PostgresInbox> {
        private Builder(Jdbi jdbi) {
            super(jdbi, PostgresDialect.DIALECT, PostgresInbox::new);
        }
    }
}
