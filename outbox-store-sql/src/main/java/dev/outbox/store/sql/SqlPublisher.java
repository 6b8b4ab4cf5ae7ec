package dev.outbox.store.sql;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.RowChecks;
import org.jdbi.v3.core.Handle;

import java.util.List;
import java.util.Objects;

/**
 * What the SQL stores' publishers share: the Jdbi {@link Handle} entry points and the checks of a message that
 * every table applies. Each store's publisher writes its own statements.
 *
 * <p>For store implementations, not for applications. Subclasses are immutable and thread-safe; a single
 * connection must of course not be used by two threads at once.
 */
public abstract class SqlPublisher implements Publisher {
    private final int maxKeyLength;

    protected SqlPublisher(int maxKeyLength) {
        this.maxKeyLength = maxKeyLength;
    }

    /** Writes one message on the handle's connection, in the handle's current transaction. */
    public final void publish(Handle handle, OutboxMessage message) {
        publish(handle, List.of(Objects.requireNonNull(message, "message must not be null")));
    }

    /** Writes {@code messages}, in list order, on the handle's connection, in the handle's current transaction. */
    public final void publish(Handle handle, List<OutboxMessage> messages) {
        Objects.requireNonNull(handle, "handle must not be null");
        publish(handle.getConnection(), messages);
    }

    /** The single-row {@code INSERT} statement; any language may write rows the same way. */
    public abstract String insertSql();

    /**
     * Checks what every store checks of message {@code index} of a batch: that it is not null and that its key is
     * at most the store's {@code maxKeyLength} code points.
     *
     * @return the message
     * @throws IllegalArgumentException naming the message's index and what is wrong
     */
    protected final OutboxMessage check(int index, OutboxMessage message) {
        if (message == null) {
            throw new IllegalArgumentException("message " + index + " is null");
        }
        try {
            RowChecks.checkKeyLength(message.key(), maxKeyLength);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("message " + index + " (topic '" + message.topic() + "'): "
                    + e.getMessage(), e);
        }
        return message;
    }
}
