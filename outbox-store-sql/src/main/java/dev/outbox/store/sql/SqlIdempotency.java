package dev.outbox.store.sql;

import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.SqlTableNames;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The writer's side of idempotency keys ({@link OutboxMessage#idempotencyKey()}), for a SQL store built with
 * {@link SqlStoreBuilder#idempotencyKeys}: before the rows of a publish call are written, each distinct idempotency
 * key of its messages is <em>claimed</em> in the table {@code <outbox table>_idempotency}, whose primary key is the
 * idempotency key (one outbox, all topics). A claim is one upsert that the database's unique index decides, never a
 * read and then a write: it inserts the key's entry, or, if the entry is older than the retention, renews it (its
 * {@code created_at} set to the database's current time); an entry within the retention is left as it is, and the
 * key is then a duplicate. The retention counts from the write (the claim), on the database's clock.
 *
 * <p>Two writers of one key, each in its own transaction: the second one's claim waits at the unique index for the
 * first one's transaction to end; if it committed, the key is a duplicate for the second, if it rolled back, the
 * second claims it. So at most one row is written per key within the retention, under the database's default
 * isolation.
 *
 * <p>A duplicate is dropped ({@link OnDuplicate#SKIP}; the others of the call are written) or refused with
 * {@link DuplicateMessageException} ({@link OnDuplicate#FAIL}), having written nothing of the call: the claims the
 * call made before it found the duplicate are rolled back to a savepoint (on a connection in auto-commit mode, where
 * there is no savepoint, each claim commits by itself; there, a call with several keys may keep the claims of the
 * keys before the duplicate). Two messages of one call with the same key: the first is the one written (SKIP) or the
 * call is refused (FAIL). The keys are claimed in ascending order ({@link String#compareTo}) so that two calls never
 * wait for each other in a cycle.
 *
 * <p>With the option off ({@link #off()}) nothing is claimed and a message with an idempotency key is refused by
 * {@link dev.outbox.spi.DeliveryOptions#check}. Immutable and thread-safe; a connection must not be used by two
 * threads at once.
 */
public final class SqlIdempotency {
    /** Appended to the outbox table's name to name the idempotency table. */
    public static final String TABLE_SUFFIX = "_idempotency";
    /** The idempotency DDL template, next to the dialect's {@code schema.sql}. */
    static final String RESOURCE = "idempotency.sql";

    private static final SqlIdempotency OFF = new SqlIdempotency(null, null, OnDuplicate.SKIP, null, null);

    /** One database's claim of the distinct, sorted idempotency keys of a publish call. */
    @FunctionalInterface
    public interface Claim {
        /**
         * Claims each key: inserts its entry, or renews it if it is older than {@code retentionMicros}; in the
         * connection's current transaction, in the order given.
         *
         * @param connection      the writer's connection
         * @param keys            the keys, distinct, in ascending order
         * @param retentionMicros the retention in microseconds, at least 1
         * @return for each key, whether it was claimed (false: written before, within the retention)
         * @throws SQLException as the driver throws it
         */
        boolean[] claim(Connection connection, String[] keys, long retentionMicros) throws SQLException;
    }

    /** One database's claim of one key ({@link #perKey}). */
    @FunctionalInterface
    public interface PerKey {
        /**
         * Claims {@code key}, as {@link Claim#claim} describes.
         *
         * @param connection      the writer's connection
         * @param key             the key
         * @param retentionMicros the retention in microseconds
         * @return whether it was claimed
         * @throws SQLException as the driver throws it
         */
        boolean claim(Connection connection, String key, long retentionMicros) throws SQLException;
    }

    /**
     * One database's statements.
     *
     * @param claim         claims the keys of a publish call
     * @param deleteExpired the {@code DELETE} of up to a limit of expired entries: its parameters are the retention
     *                      in microseconds, then the limit
     */
    public record Statements(Claim claim, String deleteExpired) {
        /**
         * Checks the components.
         *
         * @param claim         not null
         * @param deleteExpired not null
         * @throws NullPointerException if one is null
         */
        public Statements {
            Objects.requireNonNull(claim, "claim must not be null");
            Objects.requireNonNull(deleteExpired, "deleteExpired must not be null");
        }
    }

    /**
     * A claim that runs one statement per key, in order.
     *
     * @param one claims one key
     * @return a claim over it
     */
    public static Claim perKey(PerKey one) {
        Objects.requireNonNull(one, "one must not be null");
        return (connection, keys, retentionMicros) -> {
            boolean[] claimed = new boolean[keys.length];
            for (int i = 0; i < keys.length; i++) {
                claimed[i] = one.claim(connection, keys[i], retentionMicros);
            }
            return claimed;
        };
    }

    private final Statements statements;
    private final Duration retention;
    private final OnDuplicate onDuplicate;
    private final SqlErrors errors;
    private final String table;

    private SqlIdempotency(Statements statements, Duration retention, OnDuplicate onDuplicate, SqlErrors errors,
                           String table) {
        this.statements = statements;
        this.retention = retention;
        this.onDuplicate = onDuplicate;
        this.errors = errors;
        this.table = table;
    }

    /** {@return the option off: nothing is claimed, a message with an idempotency key is refused} */
    public static SqlIdempotency off() {
        return OFF;
    }

    /**
     * The option on.
     *
     * @param statements  the database's statements; not null
     * @param retention   how long an entry keeps a key from being written again, from its write; positive
     * @param onDuplicate what a duplicate does; not null
     * @param errors      translates the database's errors; not null
     * @param table       the idempotency table as it appears in SQL ({@link #table}); not null
     * @return the option on
     */
    static SqlIdempotency on(Statements statements, Duration retention, OnDuplicate onDuplicate, SqlErrors errors,
                             String table) {
        return new SqlIdempotency(Objects.requireNonNull(statements, "statements must not be null"),
                checkRetention(retention), Objects.requireNonNull(onDuplicate, "onDuplicate must not be null"),
                Objects.requireNonNull(errors, "errors must not be null"),
                Objects.requireNonNull(table, "table must not be null"));
    }

    /**
     * Checks a retention.
     *
     * @param retention the retention
     * @return {@code retention}
     * @throws IllegalArgumentException naming it if it is null, zero or negative, or longer than 100 years
     */
    static Duration checkRetention(Duration retention) {
        if (retention == null || retention.isNegative() || retention.isZero()
                || retention.compareTo(Duration.ofDays(36_500)) > 0) {
            throw new IllegalArgumentException("idempotency key retention must be positive and at most 100 years: "
                    + retention);
        }
        return retention;
    }

    /** {@return whether idempotency keys are claimed} */
    public boolean isOn() {
        return statements != null;
    }

    /** {@return the retention, or null if off} */
    public Duration retention() {
        return retention;
    }

    /** {@return what a duplicate does} */
    public OnDuplicate onDuplicate() {
        return onDuplicate;
    }

    /**
     * Claims the idempotency keys of {@code messages} (decorated and checked) and returns the messages to write: all
     * of them (the same list) if none is a duplicate, else, with {@link OnDuplicate#SKIP}, those that are not, in
     * order. Runs no statement if the option is off or no message has a key.
     *
     * @param connection the writer's connection, in its transaction
     * @param messages   the messages of the call
     * @return the messages to write, in order
     * @throws DuplicateMessageException   with {@link OnDuplicate#FAIL}, naming the first duplicate
     * @throws dev.outbox.spi.StoreException if the database fails; the caller's transaction should be rolled back
     */
    public List<OutboxMessage> claim(Connection connection, List<OutboxMessage> messages) {
        if (statements == null) {
            return messages;
        }
        Map<String, Integer> first = new TreeMap<>();
        for (int i = 0; i < messages.size(); i++) {
            String key = messages.get(i).idempotencyKey();
            if (key != null) {
                Integer before = first.putIfAbsent(key, i);
                if (before != null && onDuplicate == OnDuplicate.FAIL) {
                    throw duplicate(messages.get(i), i, "as message " + before + " of the same call has");
                }
            }
        }
        if (first.isEmpty()) {
            return messages;
        }
        String[] keys = first.keySet().toArray(new String[0]);
        boolean[] claimed;
        try {
            claimed = claimAll(connection, keys);
        } catch (SQLException e) {
            throw errors.translate("claiming " + keys.length + " idempotency key(s) in " + table, e);
        }
        List<OutboxMessage> kept = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            String key = m.idempotencyKey();
            if (key == null || first.get(key) == i && claimed[Arrays.binarySearch(keys, key)]) {
                kept.add(m);
            } else if (first.get(key) == i && onDuplicate == OnDuplicate.FAIL) {
                throw duplicate(m, i, "written before, within the retention of " + retention + " (" + table + ")");
            }
        }
        return kept.size() == messages.size() ? messages : kept;
    }

    /**
     * Runs the claim; with {@link OnDuplicate#FAIL} and several keys, inside a savepoint that is rolled back if a key
     * is a duplicate, so that the call leaves no claim behind.
     */
    private boolean[] claimAll(Connection connection, String[] keys) throws SQLException {
        if (onDuplicate == OnDuplicate.SKIP || keys.length == 1 || connection.getAutoCommit()) {
            return statements.claim().claim(connection, keys, micros());
        }
        Savepoint savepoint = connection.setSavepoint();
        boolean[] claimed = statements.claim().claim(connection, keys, micros());
        for (boolean c : claimed) {
            if (!c) {
                connection.rollback(savepoint);
                break;
            }
        }
        connection.releaseSavepoint(savepoint);
        return claimed;
    }

    private static DuplicateMessageException duplicate(OutboxMessage m, int index, String why) {
        return new DuplicateMessageException("message " + index + " (topic '" + m.topic() + "', key '" + m.key()
                + "') has the idempotency key '" + m.idempotencyKey() + "', " + why + ": nothing of the call was"
                + " written (onDuplicate FAIL)", m.idempotencyKey());
    }

    /**
     * Deletes up to {@code limit} entries older than the retention, in one statement, on {@code connection}.
     *
     * @param connection the store's connection, in a transaction of its own
     * @param limit      the most entries to delete; at least 1
     * @return how many were deleted
     * @throws SQLException as the driver throws it
     * @throws IllegalArgumentException naming {@code limit} if it is below 1
     * @throws IllegalStateException    if the option is off
     */
    int deleteExpired(Connection connection, int limit) throws SQLException {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        if (statements == null) {
            throw new IllegalStateException("idempotency keys are off: there is nothing to delete");
        }
        try (PreparedStatement statement = connection.prepareStatement(statements.deleteExpired())) {
            statement.setLong(1, micros());
            statement.setInt(2, limit);
            return statement.executeUpdate();
        }
    }

    private long micros() {
        return retention.toNanos() / 1_000L;
    }

    /**
     * The idempotency table's name as it appears in SQL: the outbox table's, quoted and qualified the same way, with
     * {@value #TABLE_SUFFIX} appended.
     *
     * @param names the store's table names
     * @return the idempotency table's name in SQL
     */
    public static String table(SqlTableNames names) {
        return SqlSideTables.name(names, TABLE_SUFFIX);
    }

    /**
     * Checks that the idempotency table's name fits the database's identifier limit.
     *
     * @param dialect the database's names
     * @param table   the outbox table's bare name
     * @throws IllegalStateException naming the table and the limit if {@code table + "_idempotency"} is too long
     */
    static void checkTableLength(SqlTableNames.Dialect dialect, String table) {
        SqlSideTables.checkLength(dialect, table, TABLE_SUFFIX, "idempotency keys on",
                "without idempotencyKeys(...)");
    }
}
