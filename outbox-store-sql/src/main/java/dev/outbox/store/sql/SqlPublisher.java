package dev.outbox.store.sql;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.DeliveryOptions;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.RowChecks;
import org.jdbi.v3.core.Handle;

import java.sql.Connection;
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
    private final MessageDecorators decorators;
    /** What {@link #committed()} wakes: the store's local commit watchers, once the store set it. */
    volatile Runnable onCommitted = () -> { };
    /** The idempotency keys' claims ({@link #claimIdempotencyKeys}), once the store set them; off until then. */
    volatile SqlIdempotency idempotency = SqlIdempotency.off();

    /**
     * A publisher without decorators.
     *
     * @param maxKeyLength the longest key, in code points, {@link #check} accepts
     */
    protected SqlPublisher(int maxKeyLength) {
        this(maxKeyLength, MessageDecorators.none());
    }

    /**
     * A publisher whose {@link #decorate} applies {@code decorators}.
     *
     * @param maxKeyLength the longest key, in code points, {@link #check} accepts
     * @param decorators   applied to every message by {@link #decorate} ({@code SqlStore.Builder.decorator}); not
     *                     null
     * @throws NullPointerException if {@code decorators} is null
     */
    protected SqlPublisher(int maxKeyLength, MessageDecorators decorators) {
        this.maxKeyLength = maxKeyLength;
        this.decorators = Objects.requireNonNull(decorators, "decorators must not be null");
    }

    /**
     * The messages as the store's {@linkplain dev.outbox.MessageDecorator decorators} transform them, in order:
     * the first thing {@code publish} does, before any check or write.
     *
     * @param messages the messages as the application gave them
     * @return the decorated messages, in the same order
     * @throws dev.outbox.MessageRejectedException if a decorator rejected a message, naming it
     * @throws IllegalArgumentException if a message asks for a delivery option the store does not carry out
     */
    protected final List<OutboxMessage> decorate(List<OutboxMessage> messages) {
        List<OutboxMessage> decorated = decorators.apply(messages);
        DeliveryOptions.check(decorated, schedules(), idempotency.isOn(),
                "this SQL store (built without scheduling(true) / idempotencyKeys(...))");
        return decorated;
    }

    /**
     * Claims the idempotency keys of {@code messages} (decorated and checked) if the store keeps them
     * ({@link SqlStoreBuilder#idempotencyKeys}), as {@link SqlIdempotency} describes: what a publisher runs after its
     * checks and before it numbers ({@link SqlKeySequence}) and writes the messages. Runs no statement if the option
     * is off or no message has an idempotency key.
     *
     * @param connection the writer's connection, in its transaction
     * @param messages   the decorated, checked messages
     * @return the messages to write: {@code messages} itself if none is dropped, else those that are not, in order
     * @throws dev.outbox.DuplicateMessageException if a message is a duplicate and the store fails on one
     * @throws dev.outbox.spi.StoreException        if the database fails
     */
    protected final List<OutboxMessage> claimIdempotencyKeys(Connection connection, List<OutboxMessage> messages) {
        return idempotency.claim(connection, messages);
    }

    /**
     * Whether this publisher writes delayed messages ({@link SqlStore.Builder#scheduling}): else {@link #decorate}
     * refuses them.
     *
     * @return false unless the dialect's publisher says otherwise
     */
    protected boolean schedules() {
        return false;
    }

    /**
     * Writes one message on the handle's connection, in the handle's current transaction.
     *
     * @param handle  the application's Jdbi handle, in the transaction the message belongs to; not null
     * @param message the message; not null
     * @throws NullPointerException if {@code handle} or {@code message} is null
     */
    public final void publish(Handle handle, OutboxMessage message) {
        publish(handle, List.of(Objects.requireNonNull(message, "message must not be null")));
    }

    /**
     * Writes {@code messages}, in list order, on the handle's connection, in the handle's current transaction.
     *
     * @param handle   the application's Jdbi handle, in the transaction the messages belong to; not null
     * @param messages the messages; see {@link Publisher#publish(java.sql.Connection, List)} for what is checked
     * @throws NullPointerException if {@code handle} is null
     */
    public final void publish(Handle handle, List<OutboxMessage> messages) {
        Objects.requireNonNull(handle, "handle must not be null");
        publish(handle.getConnection(), messages);
    }

    /** Wakes the leading dispatcher of this store in this process, if any (see {@link Publisher#committed()}). */
    @Override
    public final void committed() {
        onCommitted.run();
    }

    /**
     * The single-row {@code INSERT} statement; any language may write rows the same way.
     *
     * @return the statement's SQL, names filled in
     */
    public abstract String insertSql();

    /**
     * Checks what every store checks of message {@code index} of a batch: that it is not null and that its key is
     * at most the store's {@code maxKeyLength} code points.
     *
     * @param index   the message's index in its batch, for the exception's message
     * @param message the message, possibly null
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
