package dev.outbox.store.mysql;

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
 * Writes messages into a MySQL or MariaDB outbox table inside the caller's transaction, on the caller's
 * {@link Connection} or Jdbi {@link Handle}. Obtained from {@link MySqlStore#publisher()}.
 *
 * <p>It neither commits, rolls back nor closes the connection, and changes neither its auto-commit mode nor any
 * session setting: the messages become visible to the dispatcher when the caller commits (on a connection in
 * auto-commit mode, each call commits by itself). It runs under the caller's own timeouts (its
 * {@code innodb_lock_wait_timeout}, its driver's {@code socketTimeout}); an {@code INSERT} into the outbox waits
 * for no lock the dispatcher holds.
 *
 * <p>A batch is written as multi-row {@code INSERT ... VALUES (...), (...), ...} statements, in list order, so
 * that the ids — and therefore the delivery order of messages that share a key — follow the list: one round
 * trip for up to {@value #MAX_ROWS_PER_STATEMENT} messages or about {@value #MAX_BYTES_PER_STATEMENT} bytes of
 * payload, without the driver's {@code rewriteBatchedStatements} option. Every message is validated before
 * anything is written; a message the table cannot hold (a key longer than the store's {@code maxKeyLength}, a
 * value longer than {@code MEDIUMBLOB} allows, a string with an unpaired surrogate, which {@code utf8mb4} cannot
 * store) is rejected with an {@link IllegalArgumentException} naming it and its index.
 *
 * <p>With the store's key sequence on ({@link MySqlStore.Builder#keySequence}), each message gets the header
 * {@value dev.outbox.KeySequence#SEQUENCE}: one counter upsert per distinct (topic, key) of the batch runs after the
 * checks and before the {@code INSERT}s, as {@link SqlKeySequence} describes (the statements: {@code MySqlKeyCounter});
 * a message that carries that header already is refused, naming its index, topic and the header.
 *
 * <p>Immutable and thread-safe; a single connection must of course not be used by two threads at once.
 */
public final class MySqlPublisher extends SqlPublisher {
    /** The longest value a {@code MEDIUMBLOB} holds: 16 MiB - 1 bytes. */
    public static final int MAX_VALUE_BYTES = (1 << 24) - 1;
    static final int MAX_ROWS_PER_STATEMENT = 500;
    static final int MAX_BYTES_PER_STATEMENT = 4 * 1024 * 1024;
    private static final String ROW = "(?, ?, ?, ?, ?)";

    private final SqlTableNames names;
    private final String insertPrefix;
    /** Numbers the messages per (topic, key) before they are written, if the store's key sequence is on. */
    private final SqlKeySequence keySequence;
    /** Routes delayed messages (and those of held keys) into the scheduled table; null if scheduling is off. */
    private final SqlScheduling scheduling;
    /** The scheduled table's {@code INSERT} ({@link MySqlScheduling#insertSql}); null if scheduling is off. */
    private final String scheduleSql;

    MySqlPublisher(SqlTableNames names, int maxKeyLength, MessageDecorators decorators) {
        this(names, maxKeyLength, decorators, SqlKeySequence.off());
    }

    MySqlPublisher(SqlTableNames names, int maxKeyLength, MessageDecorators decorators, SqlKeySequence keySequence) {
        this(names, maxKeyLength, decorators, keySequence, null);
    }

    /**
     * With {@code scheduling} (null for none), delayed messages, and the messages without a time of a held key
     * ({@link SqlScheduling#route}), are written into the scheduled table, one row per statement of a JDBC batch.
     */
    MySqlPublisher(SqlTableNames names, int maxKeyLength, MessageDecorators decorators, SqlKeySequence keySequence,
                   SqlScheduling scheduling) {
        super(maxKeyLength, decorators);
        this.scheduling = scheduling;
        this.scheduleSql = scheduling == null ? null : MySqlScheduling.insertSql(names);
        this.names = names;
        this.keySequence = Objects.requireNonNull(keySequence, "keySequence must not be null");
        this.insertPrefix = "INSERT INTO " + names.outbox() + " (topic, `key`, value, headers, message_id) VALUES ";
    }

    /**
     * Writes {@code messages} on {@code connection}, in list order, with as few multi-row statements as their
     * size allows (one for a typical batch).
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
        List<OutboxMessage> decorated = decorate(input);
        String[] headers = new String[decorated.size()];
        for (int i = 0; i < decorated.size(); i++) {
            headers[i] = validate(i, decorated.get(i));
            keySequence.check(i, decorated.get(i));
            if (scheduling != null) {
                SqlScheduling.check(i, decorated.get(i));
            }
        }
        List<OutboxMessage> messages = claimIdempotencyKeys(connection, decorated);
        try {
            messages = keySequence.number(connection, messages);
        } catch (SQLException e) {
            throw MySqlDialect.ERRORS.translate("numbering " + decorated.size() + " message(s) of " + names.outbox()
                    + " per key in " + SqlKeySequence.table(names), e);
        }
        if (messages != decorated) {
            for (int i = 0; i < messages.size(); i++) {
                headers[i] = HeadersJson.write(messages.get(i).headers());
            }
        }
        if (scheduling != null) {
            List<OutboxMessage> rest = schedule(connection, messages, headers);
            if (rest != messages) {
                if (rest.isEmpty()) {
                    return;
                }
                messages = rest;
                headers = headers(rest);
            }
        }
        int from = 0;
        try {
            while (from < messages.size()) {
                int to = from;
                long bytes = 0;
                while (to < messages.size() && to - from < MAX_ROWS_PER_STATEMENT
                        && (to == from || bytes + size(messages.get(to), headers[to]) <= MAX_BYTES_PER_STATEMENT)) {
                    bytes += size(messages.get(to), headers[to]);
                    to++;
                }
                insert(connection, messages, headers, from, to);
                from = to;
            }
        } catch (SQLException e) {
            throw MySqlDialect.ERRORS.translate("writing " + messages.size() + " message(s) to " + names.outbox()
                    + (from > 0 ? " (from message " + from + ")" : ""), e);
        }
    }

    @Override
    protected boolean schedules() {
        return scheduling != null;
    }

    /**
     * Writes the messages that {@link SqlScheduling#route} sends to the scheduled table there, in list order.
     *
     * @return the other messages, in list order, for the outbox
     */
    private List<OutboxMessage> schedule(Connection connection, List<OutboxMessage> messages, String[] headers) {
        String table = SqlScheduling.table(names);
        boolean[] scheduled;
        try {
            scheduled = scheduling.route(connection, messages);
        } catch (SQLException e) {
            throw MySqlDialect.ERRORS.translate("looking for waiting messages of " + messages.size()
                    + " message(s)' keys in " + table, e);
        }
        if (scheduled == null) {
            return messages;
        }
        List<OutboxMessage> now = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(scheduleSql)) {
            for (int i = 0; i < messages.size(); i++) {
                OutboxMessage m = messages.get(i);
                if (!scheduled[i]) {
                    now.add(m);
                    continue;
                }
                statement.setString(1, m.topic());
                statement.setString(2, m.key());
                statement.setBytes(3, m.value());
                statement.setString(4, headers[i]);
                statement.setBytes(5, RowReader.bytes(MessageIds.next()));
                SqlScheduling.bindDue(statement, 6, i, m);
                statement.addBatch();
            }
            statement.executeBatch();
        } catch (SQLException e) {
            throw MySqlDialect.ERRORS.translate("writing " + (messages.size() - now.size()) + " message(s) to "
                    + table, e);
        }
        return now;
    }

    private static String[] headers(List<OutboxMessage> messages) {
        String[] headers = new String[messages.size()];
        for (int i = 0; i < headers.length; i++) {
            headers[i] = HeadersJson.write(messages.get(i).headers());
        }
        return headers;
    }

    /**
     * The single-row {@code INSERT} statement; any language may write rows the same way, with {@code headers}
     * NULL or a JSON array as described in the README.
     */
    @Override
    public String insertSql() {
        return insertPrefix + ROW;
    }

    private void insert(Connection connection, List<OutboxMessage> messages, String[] headers, int from, int to)
            throws SQLException {
        StringBuilder sql = new StringBuilder(insertPrefix.length() + (to - from) * (ROW.length() + 2));
        sql.append(insertPrefix);
        for (int i = from; i < to; i++) {
            if (i > from) {
                sql.append(", ");
            }
            sql.append(ROW);
        }
        try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
            int p = 1;
            for (int i = from; i < to; i++) {
                OutboxMessage message = messages.get(i);
                statement.setString(p++, message.topic());
                statement.setString(p++, message.key());
                statement.setBytes(p++, message.value());
                statement.setString(p++, headers[i]);
                statement.setBytes(p++, RowReader.bytes(MessageIds.next()));
            }
            statement.executeUpdate();
        }
    }

    private static long size(OutboxMessage message, String headers) {
        return 64L + message.valueSize() + 4L * message.key().length() + (headers == null ? 0 : headers.length());
    }

    /** Checks that {@code message} fits the table; returns its headers column. */
    private String validate(int index, OutboxMessage message) {
        String key = check(index, message).key();
        if (message.valueSize() > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "', key "
                    + RowChecks.abbreviate(key) + "): value is " + message.valueSize() + " bytes, longer than "
                    + MAX_VALUE_BYTES + " (MEDIUMBLOB)");
        }
        checkWellFormed(index, "topic", message.topic());
        checkWellFormed(index, "key", key);
        List<Header> headers = message.headers();
        for (int h = 0; h < headers.size(); h++) {
            checkWellFormed(index, "header " + h + " name", headers.get(h).name());
        }
        return HeadersJson.write(headers);
    }

    private static void checkWellFormed(int index, String what, String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < value.length()
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("message " + index + ": " + what + " has an unpaired surrogate"
                        + " character U+" + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT) + " at index "
                        + i + ", which utf8mb4 cannot store");
            }
        }
    }
}
