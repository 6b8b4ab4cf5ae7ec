package dev.outbox;

import java.sql.Connection;
import java.util.List;

/**
 * Writes messages to the outbox inside the caller's transaction (goharvest's "stasher").
 *
 * <p>The caller owns {@code connection} and its transaction: the publisher neither commits, rolls back nor
 * closes it, and never changes its auto-commit mode. The messages become visible to the dispatcher when, and
 * only if, the caller commits. Messages of one key written by one transaction, or by transactions that commit
 * one after the other, are delivered in the order they were written.
 *
 * <p>Implementations are thread-safe; a single connection must of course not be shared by threads.
 */
public interface Publisher {

    /**
     * Writes one message on {@code connection}.
     *
     * @param connection the application's connection, in the transaction the message belongs to; not null. Not
     *                   committed or closed here
     * @param message    the message; not null
     * @throws NullPointerException     if {@code message} is null
     * @throws IllegalArgumentException if the message does not fit the store (for example a key longer than
     *                                  the table allows), naming the bad value
     * @throws OutboxException          if the database rejects the write; the caller's transaction should be
     *                                  rolled back
     */
    default void publish(Connection connection, OutboxMessage message) {
        publish(connection, List.of(message));
    }

    /**
     * Writes {@code messages}, in list order, on {@code connection} with one batched statement where the
     * database allows.
     *
     * @param connection the application's connection, in the transaction the messages belong to; not null. Not
     *                   committed or closed here
     * @param messages   the messages; not null; an empty list writes nothing

     * @throws IllegalArgumentException if a message does not fit the store, naming it and its index
     * @throws OutboxException          if the database rejects the write
     */
    void publish(Connection connection, List<OutboxMessage> messages);

    /**
     * Tells a dispatcher of the same outbox leading in this process that a transaction which published with this
     * publisher has just committed, so that an idle leader reads at once instead of at its next poll. For stores
     * whose database cannot notify the leader itself (MySQL, MariaDB), and on Postgres too, where it wakes a leader in
     * this process about a millisecond before the database's notification would. Call it after the
     * commit, never before: the Spring Boot starter does it for you. Optional: without it, the leader learns of the
     * commit from Postgres' notification, or else at its next poll (within {@code pollInterval}). Cheap,
     * thread-safe, never throws. The default does nothing.
     */
    default void committed() {
    }
}
