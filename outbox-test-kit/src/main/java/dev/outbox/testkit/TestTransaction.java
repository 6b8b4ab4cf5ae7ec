package dev.outbox.testkit;

import dev.outbox.OutboxMessage;

import java.util.List;

/**
 * An application transaction as {@link StoreContract} drives it: messages written through the store's
 * {@link dev.outbox.Publisher} become visible to {@code mark} on {@link #commit()}, and never on
 * {@link #rollback()}. Like a database sequence, each written message takes its id when it is written, not when
 * the transaction commits, so a transaction that commits late leaves a lower id behind higher committed ones.
 *
 * <p>For a JDBC store, {@link JdbcTestTransaction} implements this over a {@link java.sql.Connection}.
 *
 * <p>Not thread-safe: one transaction is used by one thread at a time, like the connection it stands for.
 */
public interface TestTransaction extends AutoCloseable {

    /**
     * Writes {@code messages} in list order through the batch form of the store's publisher
     * ({@link dev.outbox.Publisher#publish(java.sql.Connection, List)}). The list is passed on as it is, null
     * elements included, so that the contract can check how the publisher rejects bad input.
     *
     * @param messages the messages to write, in order; passed on unchecked (may be empty, or hold {@code null})
     * @throws IllegalStateException if the transaction has ended (or whatever the publisher throws for bad
     *                               input)
     */
    void publish(List<OutboxMessage> messages);

    /**
     * Writes one message through the store's publisher, as a list of one.
     *
     * @param message the message to write; passed on unchecked, so {@code null} reaches the publisher
     */
    default void publish(OutboxMessage message) {
        publish(java.util.Collections.singletonList(message));
    }

    /** Commits: the messages written become visible. Ends the transaction. */
    void commit();

    /** Rolls back: the messages written are discarded, their ids are never used. Ends the transaction. */
    void rollback();

    /** Rolls back if the transaction has not ended, and releases its resources. Idempotent. */
    @Override
    void close();
}
