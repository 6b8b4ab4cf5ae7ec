package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.RowChecks;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlKeySequence;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.store.sql.SqlPublisher;
import org.jdbi.v3.core.Handle;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Writes messages into a Postgres outbox table inside the caller's transaction, on the caller's
 * {@link Connection} or Jdbi {@link Handle}. Obtained from {@link PostgresStore#publisher()}.
 *
 * <p>It neither commits, rolls back nor closes the connection, and does not change its auto-commit mode or any
 * session setting: the messages become visible to the dispatcher when the caller commits (on a connection in
 * auto-commit mode, each call commits by itself). Each statement carries the store's statement timeout as a
 * JDBC query timeout (in whole seconds, rounded up).
 *
 * <p>A batch is written with one prepared statement ({@code INSERT} added to a JDBC batch, sent in one round
 * trip), in list order, so that the ids — and therefore the delivery order of messages that share a key — follow
 * the list. Every message is validated before anything is written; a message the table cannot hold (a key longer
 * than the store's {@code maxKeyLength}, a U+0000 character, which Postgres text cannot store) is rejected with an
 * {@link IllegalArgumentException} naming it and its index.
 *
 * <p>With the store's key sequence on ({@link PostgresStore.Builder#keySequence}), each message gets the header
 * {@value dev.outbox.KeySequence#SEQUENCE}: one counter upsert for all the distinct (topic, key) pairs of the batch
 * ({@code PgKeyCounter}) runs after the checks and before the {@code INSERT} (or the emit, in WAL mode), as
 * {@link SqlKeySequence} describes; a message that carries that header already is refused, naming its index, topic
 * and the header.
 *
 * <h2>WAL mode</h2>
 * A store that harvests the write-ahead log instead of the table gives out a publisher in WAL mode: it writes no
 * row, but emits each message as a transactional logical message, {@code pg_logical_emit_message(true, prefix,
 * content)}, with the content in the versioned binary format documented in this package's {@code wal.sql}
 * resource (encoded in Java; the message id assigned as in table mode), on the caller's connection and in its
 * transaction, as in table mode: the message is harvested if, and only if, the transaction commits. Decorators
 * and checks are those of table mode, with the same errors (and a string that UTF-8 cannot encode, an unpaired
 * surrogate, is refused too, naming the message). A batch is one statement, one round trip (one per 64 MiB of
 * encoded messages, for very large batches), emitting the messages in list order. What differs from table mode:
 * <ul>
 *   <li>Order: messages of one transaction are delivered in the order they were emitted, and transactions in the
 *       order they <em>commit</em> (in table mode, rows are delivered in id order, and ids are taken at insert).</li>
 *   <li>{@link #insertSql()} is not an {@code INSERT}: a row inserted into the table is never harvested in WAL
 *       mode. It returns the call of the {@code <table>_emit} function (created with the store's WAL schema), which
 *       takes the same six parameters in the same order.</li>
 *   <li>Nothing is visible in the table before delivery: the backlog is in the replication slot, not in a
 *       table that can be queried.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe; a single connection must of course not be used by two threads at once.
 */
public final class PostgresPublisher extends SqlPublisher {
    /** A WAL batch is sent in one statement per this many bytes of encoded messages (at least one message). */
    static final int WAL_CHUNK_BYTES = 64 << 20;

    /** One message: its content is the second parameter. */
    private static final String EMIT_ONE_SQL = "SELECT pg_logical_emit_message(true, ?, ?)";
    /**
     * Many messages: slices of the second parameter, in the order of the arrays. The slices are taken and emitted
     * as the function scan returns the arrays' elements, which is their order (and the sort, whether the planner
     * puts it before or after the emits, keeps that order).
     */
    private static final String EMIT_MANY_SQL = "SELECT pg_logical_emit_message(true, ?, substring(? FROM m.start"
            + " FOR m.length)) FROM unnest(CAST(? AS int4[]), CAST(? AS int4[])) WITH ORDINALITY AS m(start, length, n)"
            + " ORDER BY m.n";

    private final SqlTableNames names;
    private final int queryTimeoutSeconds;
    private final String insertSql;
    /** The statement this publisher runs in table mode: {@link #insertSql}, with the commit notification if any. */
    private final String writeSql;
    /** The logical message prefix in WAL mode; null in table mode. */
    private final String walPrefix;
    /** Numbers the messages per (topic, key) before they are written, if the store's key sequence is on. */
    private final SqlKeySequence keySequence;
    /** Routes delayed messages (and those of held keys) into the scheduled table; null if scheduling is off. */
    private final SqlScheduling scheduling;
    /** The scheduled table's {@code INSERT} ({@link PgScheduling#insertSql}); null if scheduling is off. */
    private final String scheduleSql;

    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds, MessageDecorators decorators) {
        this(names, maxKeyLength, queryTimeoutSeconds, decorators, null, null);
    }

    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds, MessageDecorators decorators,
                      String walPrefix, String notifyChannel) {
        this(names, maxKeyLength, queryTimeoutSeconds, decorators, walPrefix, notifyChannel, SqlKeySequence.off());
    }

    /**
     * A publisher in table mode ({@code walPrefix} null) or in WAL mode, emitting logical messages with
     * {@code walPrefix} (normally {@link WalSql#prefix}). In table mode, a non-null {@code notifyChannel} makes
     * every write also {@code pg_notify} that channel, which Postgres delivers to the listening leader when the
     * writer's transaction commits (and folds into one per transaction). With {@code keySequence} on, the messages
     * are numbered per (topic, key) after the checks and before they are written, in both modes.
     */
    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds, MessageDecorators decorators,
                      String walPrefix, String notifyChannel, SqlKeySequence keySequence) {
        this(names, maxKeyLength, queryTimeoutSeconds, decorators, walPrefix, notifyChannel, keySequence, null);
    }

    /**
     * As above, and with {@code scheduling} (table mode only; null for none) delayed messages, and the messages
     * without a time of a held key, are written into the scheduled table ({@link SqlScheduling#route}).
     */
    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds, MessageDecorators decorators,
                      String walPrefix, String notifyChannel, SqlKeySequence keySequence, SqlScheduling scheduling) {
        super(maxKeyLength, decorators);
        if (scheduling != null && walPrefix != null) {
            throw new IllegalArgumentException("the WAL mode cannot schedule messages");
        }
        this.scheduling = scheduling;
        this.scheduleSql = scheduling == null ? null : PgScheduling.insertSql(names);
        this.keySequence = Objects.requireNonNull(keySequence, "keySequence must not be null");
        this.names = names;
        this.queryTimeoutSeconds = queryTimeoutSeconds;
        this.walPrefix = walPrefix;
        if (walPrefix == null) {
            this.insertSql = "INSERT INTO " + names.outbox()
                    + " (topic, key, value, header_names, header_values, message_id) VALUES (?, ?, ?, ?, ?, ?)";
            this.writeSql = notifyChannel == null ? insertSql
                    : "WITH n AS (SELECT pg_notify('" + notifyChannel.replace("'", "''") + "', '')) INSERT INTO "
                    + names.outbox() + " (topic, key, value, header_names, header_values, message_id)"
                    + " SELECT ?, ?, ?, ?, ?, ? FROM n";
        } else {
            if (walPrefix.isEmpty()) {
                throw new IllegalArgumentException("walPrefix must not be empty");
            }
            this.insertSql = "SELECT " + WalSql.emitFunction(names) + "(?, ?, ?, ?, ?, ?)";
            this.writeSql = insertSql;
        }
    }

    /**
     * Writes {@code messages} on {@code connection}, in list order, with one batched statement.
     *
     * @throws IllegalArgumentException if a message does not fit the table, naming it and its index; nothing
     *                                  was written then
     * @throws dev.outbox.MessageRejectedException if one of the store's {@linkplain
     *                                  dev.outbox.store.sql.SqlStore.Builder#decorator decorators} rejected a
     *                                  message, naming it; nothing was written then
     * @throws dev.outbox.spi.StoreException if the database rejects the write; the caller's transaction should
     *                                  be rolled back
     */
    @Override
    public void publish(Connection connection, List<OutboxMessage> input) {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(input, "messages must not be null");
        if (walPrefix != null) {
            refuseDelayed(input);
        }
        List<OutboxMessage> decorated = decorate(input);
        for (int i = 0; i < decorated.size(); i++) {
            validate(i, decorated.get(i));
            keySequence.check(i, decorated.get(i));
            if (scheduling != null) {
                SqlScheduling.check(i, decorated.get(i));
            }
        }
        decorated = claimIdempotencyKeys(connection, decorated);
        if (decorated.isEmpty()) {
            return;
        }
        List<OutboxMessage> messages;
        try {
            messages = keySequence.number(connection, decorated);
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("numbering " + decorated.size() + " message(s) of "
                    + names.outbox() + " per key in " + SqlKeySequence.table(names), e);
        }
        if (walPrefix != null) {
            emit(connection, messages);
            return;
        }
        if (scheduling != null && schedule(connection, messages)) {
            return;
        }
        insert(connection, messages);
    }

    private void insert(Connection connection, List<OutboxMessage> messages) {
        try (PreparedStatement statement = connection.prepareStatement(writeSql)) {
            statement.setQueryTimeout(queryTimeoutSeconds);
            if (messages.size() == 1) {
                bind(connection, statement, messages.get(0));
                statement.executeUpdate();
            } else {
                for (OutboxMessage message : messages) {
                    bind(connection, statement, message);
                    statement.addBatch();
                }
                statement.executeBatch();
            }
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("writing " + messages.size() + " message(s) to " + names.outbox(), e);
        }
    }

    @Override
    protected boolean schedules() {
        return scheduling != null;
    }

    /**
     * Writes the messages that {@link SqlScheduling#route} sends to the scheduled table there, the others into the
     * outbox, each part in list order.
     *
     * @return false if every message goes into the outbox (nothing written yet), true if all were written
     */
    private boolean schedule(Connection connection, List<OutboxMessage> messages) {
        boolean[] scheduled;
        try {
            scheduled = scheduling.route(connection, messages);
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("looking for waiting messages of " + messages.size()
                    + " message(s)' keys in " + SqlScheduling.table(names), e);
        }
        if (scheduled == null) {
            return false;
        }
        List<OutboxMessage> now = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(scheduleSql)) {
            statement.setQueryTimeout(queryTimeoutSeconds);
            for (int i = 0; i < messages.size(); i++) {
                if (!scheduled[i]) {
                    now.add(messages.get(i));
                    continue;
                }
                bind(connection, statement, messages.get(i));
                SqlScheduling.bindDue(statement, 7, i, messages.get(i));
                statement.addBatch();
            }
            statement.executeBatch();
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("writing " + (messages.size() - now.size())
                    + " message(s) to " + SqlScheduling.table(names), e);
        }
        if (!now.isEmpty()) {
            insert(connection, now);
        }
        return true;
    }

    /**
     * Refuses a delayed message in WAL mode, naming it: a logical message cannot be held back, and sending it at
     * once would break its "not before".
     */
    private static void refuseDelayed(List<OutboxMessage> messages) {
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            if (m != null && m.isDelayed()) {
                throw new IllegalArgumentException("message " + i + " (topic '" + m.topic() + "', key '" + m.key()
                        + "') asks not to be sent before " + (m.deliverAt() != null ? m.deliverAt()
                        : "a delay of " + m.deliverAfter()) + ", and a store with the WAL harvest"
                        + " (PostgresStore.Builder.walHarvest) cannot schedule messages: a logical message is"
                        + " streamed as soon as it commits. Use the table harvest with scheduling(true)");
            }
        }
    }

    /**
     * The {@code INSERT} statement this publisher runs; any language may write rows the same way. In WAL mode, where
     * an inserted row would never be harvested, the call of the {@code <table>_emit} function instead, with the same
     * six parameters (topic, key, value, header_names, header_values, message_id; a NULL message_id gets a fresh
     * id). With commit notifications on ({@link PostgresStore.Builder#commitNotifications}), this publisher's own
     * statement also calls {@code pg_notify}; a plain-SQL writer wakes the leader with the trigger of
     * {@link PostgresStore#notifyTriggerSql()}, or is found by the leader's next poll.
     */
    @Override
    public String insertSql() {
        return insertSql;
    }

    /**
     * Emits {@code messages} (decorated and checked) as logical messages, in list order: one statement that emits
     * a slice of one {@code bytea} parameter per message, the slices' offsets and lengths in two arrays, in order
     * of their ordinality. One statement per {@link #WAL_CHUNK_BYTES} of content, so no parameter nears Postgres'
     * 1 GB limit of a value.
     */
    private void emit(Connection connection, List<OutboxMessage> messages) {
        byte[][] contents = new byte[messages.size()][];
        for (int i = 0; i < contents.length; i++) {
            OutboxMessage message = messages.get(i);
            try {
                contents[i] = WalCodec.encode(message, MessageIds.next());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("message " + i + " (topic '" + message.topic() + "'): "
                        + e.getMessage(), e);
            }
        }
        try {
            if (contents.length == 1) {
                try (PreparedStatement statement = connection.prepareStatement(EMIT_ONE_SQL)) {
                    statement.setQueryTimeout(queryTimeoutSeconds);
                    statement.setString(1, walPrefix);
                    statement.setBytes(2, contents[0]);
                    statement.executeQuery().close();
                }
                return;
            }
            try (PreparedStatement statement = connection.prepareStatement(EMIT_MANY_SQL)) {
                statement.setQueryTimeout(queryTimeoutSeconds);
                int from = 0;
                while (from < contents.length) {
                    int to = chunkEnd(contents, from, WAL_CHUNK_BYTES);
                    int bytes = 0;
                    for (int i = from; i < to; i++) {
                        bytes += contents[i].length;
                    }
                    byte[] all = new byte[bytes];
                    Integer[] starts = new Integer[to - from];
                    Integer[] lengths = new Integer[to - from];
                    int at = 0;
                    for (int i = from; i < to; i++) {
                        System.arraycopy(contents[i], 0, all, at, contents[i].length);
                        starts[i - from] = at + 1; // substring counts from 1
                        lengths[i - from] = contents[i].length;
                        at += contents[i].length;
                    }
                    statement.setString(1, walPrefix);
                    statement.setBytes(2, all);
                    statement.setArray(3, connection.createArrayOf("int4", starts));
                    statement.setArray(4, connection.createArrayOf("int4", lengths));
                    statement.executeQuery().close();
                    from = to;
                }
            }
        } catch (SQLException e) {
            throw PostgresDialect.ERRORS.translate("emitting " + messages.size() + " message(s) of " + names.outbox()
                    + " to the write-ahead log (prefix " + walPrefix + ")", e);
        }
    }

    /**
     * The end (exclusive) of the chunk of {@code contents} that starts at {@code from}: as many contents as fit in
     * {@code limit} bytes together, and at least one.
     */
    static int chunkEnd(byte[][] contents, int from, int limit) {
        int to = from + 1;
        long bytes = contents[from].length;
        while (to < contents.length && bytes + contents[to].length <= limit) {
            bytes += contents[to++].length;
        }
        return to;
    }

    private void validate(int index, OutboxMessage message) {
        checkNoNul(index, "key", check(index, message).key());
        List<Header> headers = message.headers();
        for (int h = 0; h < headers.size(); h++) {
            checkNoNul(index, "header " + h + " name", headers.get(h).name());
        }
    }

    private static void checkNoNul(int index, String what, String value) {
        int at = value.indexOf('\u0000');
        if (at >= 0) {
            throw new IllegalArgumentException("message " + index + ": " + what + " "
                    + RowChecks.abbreviate(value.replace("\u0000", "\\u0000")) + " contains the character U+0000 at"
                    + " index " + at + ", which Postgres text cannot store");
        }
    }

    private static void bind(Connection connection, PreparedStatement statement, OutboxMessage message)
            throws SQLException {
        List<Header> headers = message.headers();
        String[] headerNames = new String[headers.size()];
        byte[][] headerValues = new byte[headers.size()][];
        for (int i = 0; i < headerNames.length; i++) {
            headerNames[i] = headers.get(i).name();
            headerValues[i] = headers.get(i).value();
        }
        statement.setString(1, message.topic());
        statement.setString(2, message.key());
        statement.setBytes(3, message.value());
        statement.setArray(4, connection.createArrayOf("text", headerNames));
        statement.setArray(5, connection.createArrayOf("bytea", headerValues));
        statement.setObject(6, MessageIds.next());
    }
}
