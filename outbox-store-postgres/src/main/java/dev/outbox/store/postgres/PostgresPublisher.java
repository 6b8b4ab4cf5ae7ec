package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.RowChecks;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlPublisher;
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
public final class PostgresPublisher extends SqlPublisher {
    private final SqlTableNames names;
    private final int queryTimeoutSeconds;
    private final String insertSql;

    PostgresPublisher(SqlTableNames names, int maxKeyLength, int queryTimeoutSeconds, MessageDecorators decorators) {
        super(maxKeyLength, decorators);
        this.names = names;
        this.queryTimeoutSeconds = queryTimeoutSeconds;
        this.insertSql = "INSERT INTO " + names.outbox()
                + " (topic, key, value, header_names, header_values, message_id) VALUES (?, ?, ?, ?, ?, ?)";
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
        List<OutboxMessage> messages = decorate(input);
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
            throw PostgresDialect.ERRORS.translate("writing " + messages.size() + " message(s) to " + names.outbox(), e);
        }
    }

    /** The {@code INSERT} statement this publisher runs; any language may write rows the same way. */
    @Override
    public String insertSql() {
        return insertSql;
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
