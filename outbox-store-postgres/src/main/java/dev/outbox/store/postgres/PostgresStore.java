package dev.outbox.store.postgres;

import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.SqlStoreSettings;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.JdbiException;
import org.jdbi.v3.core.argument.Argument;
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
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Executor;

/**
 * The outbox on PostgreSQL (13 or newer): a {@link Store} on Jdbi 3 and the official JDBC driver.
 *
 * <pre>{@code
 * PostgresStore store = PostgresStore.builder(dataSource)   // or builder(jdbi)
 *         .schema("app")                                   // optional: default is the search_path
 *         .table("outbox")                                 // default "outbox"; parked rows go to "outbox_parked"
 *         .build();
 * store.createSchema();                                    // idempotent; or run schemaSql() with your migrations
 * }</pre>
 *
 * <h2>Statements</h2>
 * <ul>
 *   <li><b>mark</b> is one statement:
 *       {@code UPDATE t SET leader_id = ? WHERE id = ANY(ARRAY(SELECT id FROM t WHERE leader_id IS NULL OR
 *       leader_id <> ? ORDER BY id LIMIT ?)) RETURNING ...}. The array is computed once, by an ordered scan of
 *       the primary key, and the update then fetches exactly those ids through the index. The textbook form
 *       {@code WHERE id IN (SELECT ...)} is planned as a join, which a stale row estimate (an emptied table
 *       that filled up again before it was analysed) turns into a nested loop over the whole table: seconds
 *       instead of milliseconds per mark. The mark's transaction also switches off sequential scans
 *       ({@code SET LOCAL enable_seqscan = off}) so that a stale estimate cannot turn the head-of-table scan into
 *       a full scan and sort either.</li>
 *   <li><b>purge</b>, <b>reset</b>, <b>park</b> and <b>replay</b> each take all their ids as one array
 *       ({@code = ANY(?)}): one statement, one round trip per batch. Park and replay move rows between the
 *       outbox and the parked table with one statement ({@code WITH moved AS (DELETE ... RETURNING ...) INSERT
 *       ...}), so a row is never in both tables or in neither.</li>
 * </ul>
 * Each call runs in its own short transaction on a connection from the {@link Jdbi} (or data source) at the
 * isolation level the connection has by default, which should be Postgres' default, READ COMMITTED.
 *
 * <h2>Concurrent marks</h2>
 * A mark only returns committed rows and never waits for, or blocks, transactions that insert rows: it locks
 * only the existing rows it updates. Two marks by different leaders that run at the same time pick their ids
 * from their own snapshots; where they pick the same row, the second waits for the first to commit and then
 * takes the row over (at READ COMMITTED, the update re-checks only {@code id = ANY(...)}, which still holds): a
 * new leader steals the rows of an old one, and the rows end up with the leader id of the mark that committed
 * last. {@code FOR UPDATE SKIP LOCKED} would be wrong here: a new leader must take over the rows an old leader
 * still holds. Rows are locked in ascending id order, so concurrent marks, purges and resets do not deadlock
 * one another in practice; if the database reports a deadlock or serialization failure anyway, the call fails
 * with a retriable {@link StoreException} and changed nothing.
 *
 * <h2>Timeouts</h2>
 * Every statement runs under the configured {@link Builder#statementTimeout statement timeout} (set with
 * {@code SET LOCAL statement_timeout}, so it also bounds lock waits), and while the store uses a connection it
 * sets the connection's network timeout to twice the statement timeout, so that even a silent network failure
 * ends the call. Both are restored before the connection is returned.
 *
 * <h2>Rows written by hand</h2>
 * Any language may write messages with a plain {@code INSERT} (see {@link PostgresPublisher#insertSql()}). A row
 * that is not a valid message (header arrays of different lengths, a NULL header name, an invalid topic, a key
 * longer than {@link Builder#maxKeyLength}) is marked like any other and returned in {@link
 * MarkResult#rejected()} with a reason naming the bad value, so the dispatcher parks it; other rows and keys
 * carry on.
 *
 * <p>Immutable and thread-safe.
 */
public final class PostgresStore implements Store {
    /** The default table name. */
    public static final String DEFAULT_TABLE = "outbox";
    /** The default statement timeout. */
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);
    /** Up to this many rows {@link #backlog()} counts exactly; above, it estimates. */
    public static final long EXACT_BACKLOG_LIMIT = 100_000;

    static final String SCHEMA_RESOURCE = "dev/outbox/store/postgres/schema.sql";
    static final String UPGRADE_RESOURCE = "dev/outbox/store/postgres/upgrade-message-id.sql";
    /** The message-id function's name, in the outbox's schema. */
    static final String UUIDV7_FUNCTION = "outbox_uuidv7";
    /** Serializes concurrent {@link #createSchema()} calls: {@code CREATE TABLE IF NOT EXISTS} races otherwise. */
    private static final long SCHEMA_LOCK_KEY = 0x6F7574626F78L; // "outbox"
    private static final Logger log = LoggerFactory.getLogger(PostgresStore.class);
    private static final Executor DIRECT = Runnable::run;
    /** Postgres truncates identifiers to 63 bytes (NAMEDATALEN - 1) and quotes them with double quotes. */
    private static final SqlTableNames.Dialect TABLE_NAMES = new SqlTableNames.Dialect("Postgres", 63, '"');

    private final Jdbi jdbi;
    private final SqlTableNames names;
    private final Duration statementTimeout;
    private final int networkTimeoutMillis;
    private final int maxKeyLength;
    private final RowReader reader;
    private final PostgresPublisher publisher;

    private final String uuidv7;
    private final String settingsSql;
    private final String markSettingsSql;
    private final String markSql;
    private final String purgeSql;
    private final String resetSql;
    private final String parkSql;
    private final String parkedSql;
    private final String replaySql;
    private final String backlogSql;

    private PostgresStore(Builder builder) {
        this.jdbi = builder.jdbi;
        this.names = TABLE_NAMES.names(builder.schema, builder.table);
        this.statementTimeout = builder.statementTimeout;
        this.networkTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, statementTimeout.toMillis() * 2);
        this.maxKeyLength = builder.maxKeyLength;
        this.reader = new RowReader(maxKeyLength);
        int queryTimeoutSeconds = (int) Math.min(Integer.MAX_VALUE,
                (statementTimeout.toMillis() + 999) / 1000);
        this.publisher = new PostgresPublisher(names, maxKeyLength, queryTimeoutSeconds);

        String t = names.outbox();
        String p = names.parked();
        // The schema name was validated ([a-z_][a-z0-9_]*), so quoting it is enough.
        this.uuidv7 = (names.schema() == null ? "" : '"' + names.schema() + "\".") + UUIDV7_FUNCTION;
        // The timeout is a number we formatted ourselves, never user text.
        this.settingsSql = "SELECT set_config('statement_timeout', '" + statementTimeout.toMillis() + "', true)";
        this.markSettingsSql = settingsSql + ", set_config('enable_seqscan', 'off', true)";
        // A row without a message id (written before the column existed) gets one now, stored before it is sent.
        this.markSql = "UPDATE " + t + " SET leader_id = ?, message_id = COALESCE(message_id, " + uuidv7 + "())"
                + " WHERE id = ANY(ARRAY(SELECT id FROM " + t
                + " WHERE leader_id IS NULL OR leader_id <> ? ORDER BY id LIMIT ?))"
                + " RETURNING " + RowReader.COLUMNS;
        this.purgeSql = "DELETE FROM " + t + " WHERE id = ANY(?)";
        this.resetSql = "UPDATE " + t + " SET attempts = attempts + 1,"
                + " leader_id = CASE WHEN leader_id = ? THEN NULL ELSE leader_id END"
                + " WHERE id = ANY(?)";
        this.parkSql = "WITH reasons AS (SELECT * FROM unnest(CAST(? AS bigint[]), CAST(? AS text[])) AS r(id, reason)),"
                + " moved AS (DELETE FROM " + t + " o USING reasons r WHERE o.id = r.id RETURNING "
                + prefixed("o", RowReader.COLUMNS) + ", r.reason)"
                + " INSERT INTO " + p + " (" + RowReader.COLUMNS + ", reason, parked_at)"
                + " SELECT " + RowReader.COLUMNS + ", reason, now() FROM moved";
        this.parkedSql = "SELECT id, topic, key, attempts, reason, parked_at FROM " + p + " ORDER BY id LIMIT ?";
        this.replaySql = "WITH moved AS (DELETE FROM " + p + " WHERE id = ANY(?)"
                + " RETURNING id, topic, key, value, header_names, header_values, message_id)"
                + " INSERT INTO " + t + " (topic, key, value, header_names, header_values, message_id)"
                + " SELECT topic, key, value, header_names, header_values, message_id FROM moved ORDER BY id";
        this.backlogSql = "SELECT (SELECT count(*) FROM (SELECT 1 FROM " + t + " LIMIT "
                + (EXACT_BACKLOG_LIMIT + 1) + ") head),"
                + " (SELECT CASE WHEN c.relpages > 0 AND c.reltuples > 0"
                + " THEN c.reltuples / c.relpages * (pg_relation_size(c.oid) / CAST(current_setting('block_size') AS int))"
                + " ELSE 0 END FROM pg_class c WHERE c.oid = to_regclass(?))";
    }

    /** Starts a builder for a store that takes its connections from {@code jdbi}. */
    public static Builder builder(Jdbi jdbi) {
        return new Builder(Objects.requireNonNull(jdbi, "jdbi must not be null"));
    }

    /**
     * Starts a builder for a store that takes its connections from {@code dataSource}; use a pooling data
     * source, since every call takes a connection and gives it back.
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Jdbi.create(Objects.requireNonNull(dataSource, "dataSource must not be null")));
    }

    /**
     * The DDL for this store's tables (see the {@code schema.sql} resource of this package), with the
     * configured names filled in. Idempotent: it only creates what does not exist yet.
     */
    public String schemaSql() {
        return render(SCHEMA_RESOURCE);
    }

    /**
     * The in-place upgrade of tables created before message ids (the {@code upgrade-message-id.sql} resource of this
     * package), with the configured names filled in; run it after {@link #schemaSql()}'s function exists. It only
     * changes the catalog, so it neither rewrites nor blocks rows for longer than an instant; {@link #createSchema()}
     * runs it when the {@code message_id} column is missing.
     */
    public String upgradeSql() {
        return render(UPGRADE_RESOURCE);
    }

    private String render(String resource) {
        return template(resource).replace("${outbox}", names.outbox()).replace("${parked}", names.parked())
                .replace("${uuidv7}", uuidv7);
    }

    /**
     * Creates the outbox table and its parked table if they do not exist yet ({@link #schemaSql()}), in one
     * transaction. Safe to call from several processes at once and on every start-up. A table that exists already
     * is changed only if it predates message ids: then {@link #upgradeSql()} adds the column in place, while
     * dispatchers and writers carry on (each statement holds the table's lock for an instant).
     *
     * @throws StoreException if the DDL fails, for example for lack of privileges
     */
    public void createSchema() {
        String ddl = schemaSql();
        inTransaction("creating the outbox schema for " + names.outbox(), settingsSql, handle -> {
            handle.createQuery("SELECT pg_advisory_xact_lock(?)").bind(0, SCHEMA_LOCK_KEY).mapTo(String.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(ddl);
            }
            boolean upgrade = handle.createQuery("SELECT count(*) FROM pg_attribute WHERE attname = 'message_id'"
                            + " AND NOT attisdropped AND attrelid IN (to_regclass(?), to_regclass(?))")
                    .bind(0, names.outbox()).bind(1, names.parked()).mapTo(Integer.class).one() < 2;
            if (upgrade) {
                log.info("Adding the message_id column to {} and {}", names.outbox(), names.parked());
                try (Statement statement = handle.getConnection().createStatement()) {
                    statement.execute(upgradeSql());
                }
            }
            return null;
        });
        log.info("Outbox schema ready: {} and {}", names.outbox(), names.parked());
    }

    /** The outbox table as it appears in SQL: quoted, and qualified if a schema was configured. */
    public String table() {
        return names.outbox();
    }

    /** The parked table as it appears in SQL. */
    public String parkedTable() {
        return names.parked();
    }

    public Duration statementTimeout() {
        return statementTimeout;
    }

    public int maxKeyLength() {
        return maxKeyLength;
    }

    @Override
    public PostgresPublisher publisher() {
        return publisher;
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return inTransaction("marking up to " + limit + " rows of " + names.outbox() + " for leader " + leaderId,
                markSettingsSql, handle -> {
                    List<OutboxRecord> records = new ArrayList<>();
                    List<MarkResult.Rejected> rejected = new ArrayList<>();
                    handle.createQuery(markSql)
                            .bind(0, uuid(leaderId))
                            .bind(1, uuid(leaderId))
                            .bind(2, limit)
                            .scanResultSet((supplier, context) -> {
                                var rs = supplier.get();
                                while (rs.next()) {
                                    Object row = reader.read(rs);
                                    if (row instanceof OutboxRecord record) {
                                        records.add(record);
                                    } else {
                                        rejected.add((MarkResult.Rejected) row);
                                    }
                                }
                                return null;
                            });
                    records.sort(Comparator.comparingLong(OutboxRecord::id));
                    rejected.sort(Comparator.comparingLong(MarkResult.Rejected::id));
                    if (!rejected.isEmpty()) {
                        log.warn("Marked {} row(s) of {} that are not valid messages, first: id {}: {}",
                                rejected.size(), names.outbox(), rejected.get(0).id(), rejected.get(0).reason());
                    }
                    return new MarkResult(records, rejected);
                });
    }

    /** The mark statement, for tests that compare plans. */
    String markSql() {
        return markSql;
    }

    /**
     * The plan Postgres chooses for {@link #mark} right now, under the same settings; for tests and diagnosis.
     */
    String explainMark(UUID leaderId, int limit) {
        return inTransaction("explaining the mark of " + names.outbox(), markSettingsSql, handle ->
                String.join("\n", handle.createQuery("EXPLAIN " + markSql)
                        .bind(0, uuid(leaderId)).bind(1, uuid(leaderId)).bind(2, limit)
                        .mapTo(String.class).list()));
    }

    @Override
    public void purge(Collection<Long> ids) {
        Long[] array = ids("ids", ids);
        if (array.length == 0) {
            return;
        }
        inTransaction("purging " + array.length + " rows of " + names.outbox(), settingsSql, handle ->
                handle.createUpdate(purgeSql).bind(0, bigints(array)).execute());
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        Objects.requireNonNull(leaderId, "leaderId must not be null");
        Long[] array = ids("ids", ids);
        if (array.length == 0) {
            return;
        }
        inTransaction("resetting " + array.length + " rows of " + names.outbox(), settingsSql, handle ->
                handle.createUpdate(resetSql).bind(0, uuid(leaderId)).bind(1, bigints(array)).execute());
    }

    @Override
    public void park(Map<Long, String> reasons) {
        Objects.requireNonNull(reasons, "reasons must not be null");
        if (reasons.isEmpty()) {
            return;
        }
        Long[] ids = new Long[reasons.size()];
        String[] texts = new String[reasons.size()];
        int i = 0;
        for (Map.Entry<Long, String> entry : reasons.entrySet()) {
            if (entry.getKey() == null) {
                throw new IllegalArgumentException("reasons contains a null id");
            }
            ids[i] = entry.getKey();
            texts[i] = entry.getValue() == null ? "(no reason given)" : entry.getValue().replace("\u0000", "\\u0000");
            i++;
        }
        inTransaction("parking " + ids.length + " rows of " + names.outbox(), settingsSql, handle ->
                handle.createUpdate(parkSql).bind(0, bigints(ids)).bind(1, texts(texts)).execute());
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return inTransaction("listing parked rows of " + names.parked(), settingsSql, handle ->
                handle.createQuery(parkedSql).bind(0, limit).map((rs, ctx) -> {
                    OffsetDateTime parkedAt = rs.getObject(6, OffsetDateTime.class);
                    return new ParkedRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getInt(4),
                            rs.getString(5), parkedAt == null ? null : parkedAt.toInstant());
                }).list());
    }

    @Override
    public int replay(Collection<Long> ids) {
        Long[] array = ids("ids", ids);
        if (array.length == 0) {
            return 0;
        }
        int replayed = inTransaction("replaying " + array.length + " parked rows into " + names.outbox(),
                settingsSql, handle -> handle.createUpdate(replaySql).bind(0, bigints(array)).execute());
        log.info("Replayed {} parked row(s) into {}", replayed, names.outbox());
        return replayed;
    }

    /**
     * The rows in the outbox table, marked or not. Exact up to {@value #EXACT_BACKLOG_LIMIT} rows (it counts the
     * head of the table); above that, the planner's estimate from the table's statistics and current size,
     * never less than {@value #EXACT_BACKLOG_LIMIT} + 1.
     */
    @Override
    public long backlog() {
        return inTransaction("counting the backlog of " + names.outbox(), settingsSql, handle ->
                handle.createQuery(backlogSql).bind(0, names.outbox()).map((rs, ctx) -> {
                    long counted = rs.getLong(1);
                    if (counted <= EXACT_BACKLOG_LIMIT) {
                        return counted;
                    }
                    return Math.max(counted, (long) rs.getDouble(2));
                }).one());
    }

    @Override
    public String toString() {
        return "PostgresStore{table=" + names.outbox() + ", statementTimeout=" + statementTimeout + '}';
    }

    /**
     * Runs {@code work} in a transaction of its own, after {@code settings} (a {@code SELECT set_config(...)}
     * local to the transaction), with the connection's network timeout bounded; translates every failure.
     */
    private <T> T inTransaction(String operation, String settings, HandleCallback<T, SQLException> work) {
        Handle handle;
        try {
            handle = jdbi.open();
        } catch (JdbiException | IllegalStateException e) {
            throw PostgresErrors.translate(operation, e);
        }
        Connection connection = handle.getConnection();
        Integer previousNetworkTimeout = null;
        try {
            previousNetworkTimeout = setNetworkTimeout(connection);
            return handle.inTransaction(h -> {
                h.createQuery(settings).mapTo(String.class).one();
                return work.withHandle(h);
            });
        } catch (SQLException | JdbiException e) {
            throw PostgresErrors.translate(operation, e);
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

    private static void release(Handle handle, Connection connection, Integer previousNetworkTimeout) {
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

    private static String prefixed(String alias, String columns) {
        StringBuilder out = new StringBuilder();
        for (String column : columns.split(",\\s*")) {
            if (out.length() > 0) {
                out.append(", ");
            }
            out.append(alias).append('.').append(column);
        }
        return out.toString();
    }

    private static Long[] ids(String what, Collection<Long> ids) {
        Objects.requireNonNull(ids, what + " must not be null");
        Long[] array = ids.toArray(new Long[0]);
        for (int i = 0; i < array.length; i++) {
            if (array[i] == null) {
                throw new IllegalArgumentException(what + " contains null at position " + i);
            }
        }
        return array;
    }

    private static Argument uuid(UUID value) {
        return (position, statement, context) -> statement.setObject(position, value);
    }

    private static Argument bigints(Long[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("bigint", values));
    }

    private static Argument texts(String[] values) {
        return (position, statement, context) ->
                statement.setArray(position, statement.getConnection().createArrayOf("text", values));
    }

    private static String template(String resource) {
        try (InputStream in = PostgresStore.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("resource " + resource + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource, e);
        }
    }

    /**
     * Configures a {@link PostgresStore}. Not thread-safe; {@link #build()} returns an immutable store. Every
     * setter rejects a bad value at once, naming it.
     */
    public static final class Builder {
        private final Jdbi jdbi;
        private String schema;
        private String table = DEFAULT_TABLE;
        private Duration statementTimeout = DEFAULT_STATEMENT_TIMEOUT;
        private int maxKeyLength = Integer.MAX_VALUE;

        private Builder(Jdbi jdbi) {
            this.jdbi = jdbi;
        }

        /**
         * The schema of the outbox tables. Default: none, so the tables are found through the connection's
         * {@code search_path}. Lower-case letters, digits and underscores, at most 63 characters.
         */
        public Builder schema(String schema) {
            this.schema = TABLE_NAMES.validateSchema(schema);
            return this;
        }

        /**
         * The outbox table's name; the parked rows go to a table of the same name with {@code _parked}
         * appended. Default {@value PostgresStore#DEFAULT_TABLE}. Lower-case letters, digits and underscores, at
         * most 56 characters (so that the parked table's name fits Postgres' limit of 63).
         */
        public Builder table(String table) {
            this.table = TABLE_NAMES.validateTable(table);
            return this;
        }

        /**
         * The longest statement (or lock wait) any call may take; default 30 s, at least 1 ms. The publisher
         * applies it as a JDBC query timeout, rounded up to whole seconds.
         */
        public Builder statementTimeout(Duration statementTimeout) {
            this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
            return this;
        }

        /**
         * The longest key, in characters, that the publisher writes and that a marked row may have (a longer
         * one, written by plain SQL, is rejected so that the dispatcher parks it). Default: no limit beyond
         * Postgres' own; set it to what your consumers accept.
         */
        public Builder maxKeyLength(int maxKeyLength) {
            this.maxKeyLength = SqlStoreSettings.maxKeyLength(maxKeyLength);
            return this;
        }

        public PostgresStore build() {
            return new PostgresStore(this);
        }
    }
}
