package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.SqlTableNames;
import org.jdbi.v3.core.Handle;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
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
 * <p>Immutable and thread-safe; a single connection must of course not be used by two threads at once.
 */
public final class PostgresPublisher implements Publisher {
    private final SqlTableNames names;
    private final int maxKeyLength;
    private final int queryTimeoutSeconds;
    private final String insertSql;

    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds) {
        this.names = names;
        this.maxKeyLength = maxKeyLength;
        this.queryTimeoutSeconds = queryTimeoutSeconds;
        this.insertSql = "INSERT INTO " + names.outbox()
                + " (topic, key, value, header_names, header_values, message_id) VALUES (?, ?, ?, ?, ?, ?)";
    }

    /**
     * Writes {@code messages} on {@code connection}, in list order, with one batched statement.
     *
     * @throws IllegalArgumentException if a message does not fit the table, naming it and its index; nothing
     *                                  was written then
     * @throws dev.outbox.spi.StoreException if the database rejects the write; the caller's transaction should
     *                                  be rolled back
     */
    @Override
    public void publish(Connection connection, List<OutboxMessage> messages) {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(messages, "messages must not be null");
        for (int i = 0; i < messages.size(); i++) {
            validate(i, messages.get(i));
        }
        if (messages.isEmpty()) {
            return;
        }
        try (PreparedStatement statement = connection.prepareStatement(insertSql)) {
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
            throw PostgresErrors.translate("writing " + messages.size() + " message(s) to " + names.outbox(), e);
        }
    }

    /** Writes one message on the handle's connection, in the handle's current transaction. */
    public void publish(Handle handle, OutboxMessage message) {
        publish(handle, List.of(Objects.requireNonNull(message, "message must not be null")));
    }

    /** Writes {@code messages}, in list order, on the handle's connection, in the handle's current transaction. */
    public void publish(Handle handle, List<OutboxMessage> messages) {
        Objects.requireNonNull(handle, "handle must not be null");
        publish(handle.getConnection(), messages);
    }

    /**
     * The {@code INSERT} statement this publisher runs; any language may write rows the same way. The last
     * parameter is the message id (a version 7 UUID from {@link MessageIds#next()}); a plain-SQL writer may leave the
     * column out, and the column default assigns one.
     */
    public String insertSql() {
        return insertSql;
    }

    private void validate(int index, OutboxMessage message) {
        if (message == null) {
            throw new IllegalArgumentException("message " + index + " is null");
        }
        String key = message.key();
        if (key.length() > maxKeyLength) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "'): key is "
                    + key.length() + " characters, longer than the store's maxKeyLength " + maxKeyLength + ": "
                    + RowReader.abbreviate(key));
        }
        checkNoNul(index, "key", key);
        List<Header> headers = message.headers();
        for (int h = 0; h < headers.size(); h++) {
            checkNoNul(index, "header " + h + " name", headers.get(h).name());
        }
    }

    private static void checkNoNul(int index, String what, String value) {
        int at = value.indexOf('\u0000');
        if (at >= 0) {
            throw new IllegalArgumentException("message " + index + ": " + what + " "
                    + RowReader.abbreviate(value.replace("\u0000", "\\u0000")) + " contains the character U+0000 at"
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
