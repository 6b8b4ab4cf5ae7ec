package dev.outbox.store.h2;

import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlErrors;
import dev.outbox.store.sql.SqlPublisher;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

/**
 * Writes messages into an H2 outbox table inside the caller's transaction, on the caller's connection: one prepared
 * {@code INSERT} added to a JDBC batch, in list order, so that the ids follow the list. It neither commits nor
 * closes the connection. Every message is checked (decorators, key length) before anything is written. Immutable and
 * thread-safe; a connection must not be used by two threads at once.
 */
final class H2Publisher extends SqlPublisher {
    private final String table;
    private final String insertSql;
    private final SqlErrors errors;

    H2Publisher(SqlTableNames names, int maxKeyLength, MessageDecorators decorators, SqlErrors errors) {
        super(maxKeyLength, decorators);
        this.table = names.outbox();
        this.errors = errors;
        this.insertSql = "INSERT INTO " + table + " (topic, \"key\", \"value\", header_names, header_values, message_id)"
                + " VALUES (?, ?, ?, ?, ?, ?)";
    }

    @Override
    public void publish(Connection connection, List<OutboxMessage> input) {
        Objects.requireNonNull(connection, "connection must not be null");
        List<OutboxMessage> messages = decorate(Objects.requireNonNull(input, "messages must not be null"));
        for (int i = 0; i < messages.size(); i++) {
            check(i, messages.get(i));
        }
        try (PreparedStatement statement = connection.prepareStatement(insertSql)) {
            for (OutboxMessage m : messages) {
                List<Header> headers = m.headers();
                statement.setString(1, m.topic());
                statement.setString(2, m.key());
                statement.setBytes(3, m.value());
                statement.setArray(4, connection.createArrayOf("VARCHAR", headers.stream().map(Header::name).toArray()));
                statement.setArray(5, connection.createArrayOf("VARBINARY", headers.stream().map(Header::value).toArray()));
                statement.setObject(6, MessageIds.next());
                statement.addBatch();
            }
            statement.executeBatch();
        } catch (SQLException e) {
            throw errors.translate("writing " + messages.size() + " message(s) to " + table, e);
        }
    }

    /** The single-row {@code INSERT}: topic, key, value, header names, header values and message id. */
    @Override
    public String insertSql() {
        return insertSql;
    }
}
