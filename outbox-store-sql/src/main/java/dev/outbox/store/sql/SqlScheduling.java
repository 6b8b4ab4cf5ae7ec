package dev.outbox.store.sql;

import dev.outbox.OutboxMessage;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.SqlTableNames;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.IntFunction;

/**
 * "Not before" for a SQL store built with {@link SqlStoreBuilder#scheduling scheduling(true)}: a message with a
 * {@linkplain OutboxMessage#deliverAt() time} or a {@linkplain OutboxMessage#deliverAfter() delay} is written into the
 * table {@code <outbox table>_scheduled} (its own DDL, {@code scheduling.sql}) with its due time on the database's
 * clock, and {@link #releaseDue} moves the due ones into the outbox, where both harvests find them like any other row.
 *
 * <h2>Holding the key</h2>
 * By default ({@link SqlStoreBuilder#scheduledHoldsKey scheduledHoldsKey(true)}) a message without a time also goes
 * into the scheduled table, due at once, when its (topic, key) has a row waiting there (one {@code EXISTS} query per
 * distinct (topic, key) of a publish call, {@link #route}) or when an earlier message of the same call went there; a
 * release moves a row only if no earlier (lower id) row of its (topic, key) is still waiting for its time. So a key's
 * messages are delivered in the order they were written, delayed or not.
 *
 * <p>With {@code scheduledHoldsKey(false)} only the delayed messages go into the scheduled table ({@link #route} runs
 * no query), and a release moves every due row, whatever waits before it: the dialect, given the same choice, leaves
 * out of its move the {@code NOT EXISTS} over the earlier waiting rows of the key. A key's order then holds among its
 * messages without a time only.
 *
 * <h2>Why a key's order survives a release racing a writer (holding the key)</h2>
 * The release picks its rows {@code FOR UPDATE} (not {@code SKIP LOCKED}: a second release waits for the first, then
 * skips the rows it moved), inserts them into the outbox (ids at the tail, in scheduled-id order) and deletes them, in
 * one transaction. A writer whose {@code EXISTS} runs before that transaction commits still sees the rows and writes
 * behind them into the scheduled table; one whose {@code EXISTS} runs after it sees none, and takes its outbox id
 * after the moved rows took theirs. Either way the writer's message comes after the moved ones.
 *
 * <p>Immutable and thread-safe; a connection must not be used by two threads at once.
 */
public final class SqlScheduling implements ScheduledMessages {
    /** Appended to the outbox table's name to name the scheduled table. */
    public static final String TABLE_SUFFIX = "_scheduled";
    /** The scheduling DDL template, next to the dialect's {@code schema.sql}. */
    static final String RESOURCE = "scheduling.sql";

    /** A database's move of due rows into the outbox, in the release's transaction. */
    @FunctionalInterface
    public interface Mover {
        /**
         * Moves up to {@code limit} due rows, as {@link SqlScheduling} describes, in the connection's transaction.
         *
         * @param tx         the store's transactions, to prepare statements with its query timeout
         * @param connection the release's connection, in its transaction
         * @param limit      the most rows to move, at least 1
         * @return how many rows were moved
         * @throws SQLException as the driver throws it
         */
        int move(SqlTransactions tx, Connection connection, int limit) throws SQLException;
    }

    /**
     * A database's statements for the scheduled table.
     *
     * @param exists   whether a (topic, key) has a row waiting: parameters topic, key; returns a row if so
     * @param mover    the release's move
     * @param nextDue  the microseconds from the database's now until the earliest waiting row that is not due yet,
     *                 one row, one column, NULL if there is none
     * @param prologue the release transaction's first statement, or null
     */
    public record Statements(String exists, Mover mover, String nextDue, String prologue) {
        /**
         * @param exists   whether a (topic, key) has a row waiting
         * @param mover    the release's move
         * @param nextDue  the microseconds until the earliest row not due yet
         * @param prologue the release transaction's first statement, or null
         * @throws NullPointerException if a component other than {@code prologue} is null
         */
        public Statements {
            Objects.requireNonNull(exists, "exists must not be null");
            Objects.requireNonNull(mover, "mover must not be null");
            Objects.requireNonNull(nextDue, "nextDue must not be null");
        }
    }

    private final SqlTransactions tx;
    private final String table;
    private final String outbox;
    private final Statements sql;
    private final boolean holdsKey;

    /**
     * @param tx       the store's transactions; not null
     * @param names    the store's table names; not null
     * @param sql      the database's statements, whose move leaves out the earlier rows' check when
     *                 {@code holdsKey} is false; not null
     * @param holdsKey whether a waiting row holds its key ({@link SqlStoreBuilder#scheduledHoldsKey})
     */
    public SqlScheduling(SqlTransactions tx, SqlTableNames names, Statements sql, boolean holdsKey) {
        this.tx = Objects.requireNonNull(tx, "tx must not be null");
        this.table = table(names);
        this.outbox = names.outbox();
        this.sql = Objects.requireNonNull(sql, "sql must not be null");
        this.holdsKey = holdsKey;
    }

    /** {@return whether a waiting row holds its key's later messages ({@link SqlStoreBuilder#scheduledHoldsKey})} */
    public boolean holdsKey() {
        return holdsKey;
    }

    /**
     * The builder's choice, for a store's constructor to give its dialect's release.
     *
     * @param builder the store's builder
     * @return whether a waiting row holds its key's later messages ({@link SqlStoreBuilder#scheduledHoldsKey})
     */
    public static boolean holdsKey(SqlStoreBuilder<?, ?> builder) {
        return builder.scheduledHoldsKey;
    }

    /**
     * A move in three statements, for a database without a data-modifying {@code WITH}: {@code pick} (parameter: the
     * limit) returns the ids to move, locked, in ascending order; {@code move(n)} inserts the rows of its {@code n}
     * id parameters into the outbox in id order; {@code delete(n)} deletes them.
     *
     * @param pick   the ids of the due rows to move, {@code FOR UPDATE}, ascending
     * @param move   the {@code INSERT ... SELECT} for n ids
     * @param delete the {@code DELETE} for n ids
     * @return the move
     */
    public static Mover pickMoveDelete(String pick, IntFunction<String> move, IntFunction<String> delete) {
        return (tx, connection, limit) -> {
            List<Long> ids = new ArrayList<>();
            try (PreparedStatement s = tx.prepare(connection, pick)) {
                s.setInt(1, limit);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
            }
            if (ids.isEmpty()) {
                return 0;
            }
            for (String statement : List.of(move.apply(ids.size()), delete.apply(ids.size()))) {
                try (PreparedStatement s = tx.prepare(connection, statement)) {
                    for (int i = 0; i < ids.size(); i++) {
                        s.setLong(i + 1, ids.get(i));
                    }
                    s.executeUpdate();
                }
            }
            return ids.size();
        };
    }

    /**
     * {@code n} parameter marks for an {@code IN} list of {@link #pickMoveDelete}'s statements.
     *
     * @param n the count, at least 1
     * @return {@code ?, ?, …}
     */
    public static String marks(int n) {
        return String.join(", ", Collections.nCopies(n, "?"));
    }

    @Override
    public Release releaseDue(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return tx.inTransaction("moving up to " + limit + " due messages from " + table + " into " + outbox,
                sql.prologue(), handle -> {
                    Connection connection = handle.getConnection();
                    int moved = sql.mover().move(tx, connection, limit);
                    Duration next = null;
                    try (PreparedStatement s = tx.prepare(connection, sql.nextDue());
                         ResultSet rs = s.executeQuery()) {
                        if (rs.next()) {
                            long micros = rs.getLong(1);
                            next = rs.wasNull() ? null : Duration.of(Math.max(0, micros), ChronoUnit.MICROS);
                        }
                    }
                    return new Release(moved, next);
                });
    }

    /**
     * Which of {@code messages} go into the scheduled table: the delayed ones, and, if a waiting row {@linkplain
     * #holdsKey() holds its key}, those whose (topic, key) has a row waiting there or an earlier message of this call
     * that goes there. Holding, it runs one {@code EXISTS} query per distinct (topic, key) of the messages without a
     * time that no earlier message of the call holds already, with the store's query timeout where the dialect sets
     * one; not holding, none.
     *
     * @param connection the writer's connection, in its transaction
     * @param messages   the checked messages of one publish call
     * @return per message, whether it goes into the scheduled table; null if none does
     * @throws SQLException as the driver throws it
     */
    public boolean[] route(Connection connection, List<OutboxMessage> messages) throws SQLException {
        if (!holdsKey) {
            return delayed(messages);
        }
        boolean[] scheduled = null;
        Set<List<String>> held = new HashSet<>();
        Map<List<String>, Boolean> waiting = new HashMap<>();
        try (PreparedStatement exists = tx.prepare(connection, sql.exists())) {
            for (int i = 0; i < messages.size(); i++) {
                OutboxMessage m = messages.get(i);
                List<String> topicKey = List.of(m.topic(), m.key());
                boolean hold = m.isDelayed() || held.contains(topicKey);
                if (!hold) {
                    Boolean found = waiting.get(topicKey);
                    if (found == null) {
                        exists.setString(1, m.topic());
                        exists.setString(2, m.key());
                        try (ResultSet rs = exists.executeQuery()) {
                            found = rs.next();
                        }
                        waiting.put(topicKey, found);
                    }
                    hold = found;
                }
                if (hold) {
                    held.add(topicKey);
                    if (scheduled == null) {
                        scheduled = new boolean[messages.size()];
                    }
                    scheduled[i] = true;
                }
            }
        }
        return scheduled;
    }

    /** Per message, whether it is delayed; null if none is. */
    private static boolean[] delayed(List<OutboxMessage> messages) {
        boolean[] scheduled = null;
        for (int i = 0; i < messages.size(); i++) {
            if (messages.get(i).isDelayed()) {
                if (scheduled == null) {
                    scheduled = new boolean[messages.size()];
                }
                scheduled[i] = true;
            }
        }
        return scheduled;
    }

    /**
     * Refuses a message whose time or delay the scheduled table cannot hold; part of the checks a publisher makes of
     * every message before it writes anything.
     *
     * @param index   the message's index in its batch
     * @param message the message, checked not null
     * @throws IllegalArgumentException naming the message and the value
     */
    public static void check(int index, OutboxMessage message) {
        atMicros(index, message);
        delayMicros(index, message);
    }

    /**
     * A message's {@linkplain OutboxMessage#deliverAt() time} as microseconds since the epoch, rounded up (so that a
     * message is never due before its time), for the due-time parameter of a scheduled row; null if it has none.
     *
     * @param index   the message's index in its batch, for the error
     * @param message the message
     * @return the microseconds, or null
     * @throws IllegalArgumentException naming the message if the time is beyond what the column holds
     */
    public static Long atMicros(int index, OutboxMessage message) {
        Instant at = message.deliverAt();
        if (at == null) {
            return null;
        }
        try {
            long micros = Math.multiplyExact(at.getEpochSecond(), 1_000_000L) + at.getNano() / 1000;
            return at.getNano() % 1000 == 0 ? micros : micros + 1;
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "'): deliverAt "
                    + at + " is out of range", e);
        }
    }

    /**
     * A message's {@linkplain OutboxMessage#deliverAfter() delay} in microseconds, rounded up, for the due-time
     * parameter of a scheduled row (added to the database's now, or to the time); 0 if it has none.
     *
     * @param index   the message's index in its batch, for the error
     * @param message the message
     * @return the microseconds, zero or more
     * @throws IllegalArgumentException naming the message if the delay is beyond what the column holds
     */
    public static long delayMicros(int index, OutboxMessage message) {
        Duration delay = message.deliverAfter();
        if (delay == null) {
            return 0;
        }
        try {
            long micros = Math.multiplyExact(delay.getSeconds(), 1_000_000L) + delay.getNano() / 1000;
            return delay.getNano() % 1000 == 0 ? micros : micros + 1;
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "'): deliverAfter "
                    + delay + " is out of range", e);
        }
    }

    /**
     * Binds message {@code index}'s due time to the two parameters from {@code parameter} on: its time in microseconds
     * since the epoch or NULL ({@link #atMicros}), then its delay in microseconds ({@link #delayMicros}). A dialect's
     * scheduled {@code INSERT} makes the due time the time, or the database's now if NULL, plus the delay.
     *
     * @param statement the scheduled table's {@code INSERT}
     * @param parameter the first of the two parameters
     * @param index     the message's index in its batch, for an error
     * @param message   the message
     * @throws SQLException as the driver throws it
     */
    public static void bindDue(PreparedStatement statement, int parameter, int index, OutboxMessage message)
            throws SQLException {
        Long at = atMicros(index, message);
        if (at == null) {
            statement.setNull(parameter, Types.BIGINT);
        } else {
            statement.setLong(parameter, at);
        }
        statement.setLong(parameter + 1, delayMicros(index, message));
    }

    /**
     * The scheduled table's name as it appears in SQL: the outbox table's, quoted and qualified the same way, with
     * {@value #TABLE_SUFFIX} appended.
     *
     * @param names the store's table names
     * @return the scheduled table's name in SQL
     */
    public static String table(SqlTableNames names) {
        String outbox = names.outbox();
        char quote = outbox.charAt(outbox.length() - 1);
        return outbox.substring(0, outbox.length() - 1) + TABLE_SUFFIX + quote;
    }

    /**
     * The name of one of the scheduled table's indexes, {@code <table>_scheduled_<what>}, quoted, not qualified (an
     * index takes its table's schema).
     *
     * @param names the store's table names
     * @param what  {@code due} or {@code key}
     * @return the index's name in SQL
     */
    public static String index(SqlTableNames names, String what) {
        String outbox = names.outbox();
        char quote = outbox.charAt(outbox.length() - 1);
        return quote + names.table() + TABLE_SUFFIX + "_" + what + quote;
    }

    /**
     * Checks that the scheduled table's name, and its indexes' ({@link #index}), fit the database's identifier limit.
     *
     * @param dialect the database's names
     * @param table   the outbox table's bare name
     * @throws IllegalStateException naming the table and the limit if {@code table + "_scheduled_due"} is too long
     */
    static void checkTableLength(SqlTableNames.Dialect dialect, String table) {
        int max = dialect.maxIdentifierLength() - (TABLE_SUFFIX + "_due").length();
        if (table.length() > max) {
            throw new IllegalStateException("table name '" + table + "' is " + table.length() + " characters: with"
                    + " scheduling on, its scheduled table '" + table + TABLE_SUFFIX + "' and that table's index '"
                    + table + TABLE_SUFFIX + "_due' must fit the database's identifier limit of " + dialect.maxIdentifierLength() + ", so at most " + max
                    + " characters (or scheduling(false))");
        }
    }
}
