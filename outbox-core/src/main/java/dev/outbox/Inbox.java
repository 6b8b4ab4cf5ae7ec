package dev.outbox;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The consumer's side of the outbox: a table of the message ids each consumer has processed, written in the same
 * transaction as the consumer's own effects, so that a redelivered message (at-least-once delivery repeats the
 * messages that were in flight at a failure) is recognised and its effect applied exactly once.
 *
 * <pre>{@code
 * try (Connection c = dataSource.getConnection()) {
 *     c.setAutoCommit(false);
 *     inbox.process(c, "billing", messageId, tx -> applyEffect(tx, payload));
 *     c.commit();
 * }
 * }</pre>
 *
 * <p>Implementations ({@code PostgresInbox}, {@code MySqlInbox}) are thread-safe; a single connection must of
 * course not be used by two threads at once. Every failure of the database is reported as a
 * {@link dev.outbox.spi.StoreException}.
 */
public interface Inbox {

    /**
     * Records {@code messageId} as processed by {@code consumer}, on {@code connection} in the caller's transaction,
     * and runs {@code handler} on the same connection if, and only if, the id was new. The caller owns the
     * transaction: the record and the handler's effects commit or roll back together. If another transaction is
     * recording the same id at the same moment, this call waits for it: if it commits, the id is not new; if it
     * rolls back, it is.
     *
     * @param connection the caller's connection, in its open transaction; not null
     * @param consumer   who processes the message (a service or handler name); see {@link #validateConsumer}
     * @param messageId  the message's id ({@code OutboxRecord.messageId}, a header of the published record); not null
     * @param handler    the work for a new message; not null
     * @return true if the id was new and the handler ran; false if the id had been processed already (nothing
     *         ran)
     * @throws InboxHandlerException if the handler threw; the caller must roll back
     * @throws dev.outbox.spi.StoreException if the database failed; the caller must roll back
     * @throws IllegalArgumentException if {@code consumer} is not a valid consumer name
     */
    boolean process(Connection connection, String consumer, UUID messageId, Handler handler);

    /**
     * Writes a message that could not be processed to the failed-messages table, on {@code connection} in the
     * caller's transaction. A second failure of the same (consumer, message id) keeps the first row and counts
     * nothing twice. Failed messages are not recorded as processed: a later delivery of the same id is processed.
     *
     * @param connection the caller's connection, in its open transaction; not null
     * @param failed     the failed message; not null
     * @throws dev.outbox.spi.StoreException if the database failed; the caller must roll back
     */
    void recordFailure(Connection connection, FailedMessage failed);

    /**
     * The oldest failed messages of {@code consumer}, by the time they failed, at most {@code limit}. A read on a
     * connection of the inbox's own.
     *
     * @param consumer the consumer; see {@link #validateConsumer}
     * @param limit    the most messages to return, at least 1
     * @return the failed messages, oldest first; empty if none
     * @throws IllegalArgumentException if {@code consumer} is not valid or {@code limit} is less than 1
     * @throws dev.outbox.spi.StoreException if the database failed
     */
    List<FailedMessage> failed(String consumer, int limit);

    /**
     * The consumers that have failed messages, each once, in the order of their names (as the database sorts them),
     * at most {@code limit}: what an operator's view of the failed-messages table starts from when it is not told
     * which consumers write to it. A read on a connection of the inbox's own.
     *
     * @param limit the most names to return, at least 1
     * @return the consumers' names, each once; empty if none
     * @throws IllegalArgumentException if {@code limit} is less than 1
     * @throws dev.outbox.spi.StoreException if the database failed
     */
    List<String> failedConsumers(int limit);

    /**
     * The failed message of {@code consumer} with {@code messageId}, value included, or empty if there is none (the
     * consumer never gave up on it, or it was deleted). A read on a connection of the inbox's own.
     *
     * @param consumer  the consumer; see {@link #validateConsumer}
     * @param messageId the message's id; not null
     * @return the failed message, or empty
     * @throws IllegalArgumentException if {@code consumer} is not a valid consumer name
     * @throws dev.outbox.spi.StoreException if the database failed
     */
    Optional<FailedMessage> failedMessage(String consumer, UUID messageId);

    /**
     * Deletes the entries processed longer ago than {@link #retention()}, in batches (each a bounded statement in a
     * transaction of its own, so it never holds many locks for long), until none is left.
     *
     * @return how many entries were deleted
     */
    int purgeExpired();

    /**
     * How long an entry is kept: a message redelivered later than this after it was processed would be processed
     * again. Keep it longer than any redelivery can come (the dispatcher's retries, a replay of parked records, a
     * consumer group reset to an older offset).
     *
     * @return the retention, as configured on the inbox's builder
     */
    Duration retention();

    /**
     * Checks a consumer name: 1 to {@value #MAX_CONSUMER_LENGTH} characters, not blank, no control characters and
     * no surrogates (so no character outside the Basic Multilingual Plane, such as an emoji).

     *
     * @param consumer the name to check
     * @return {@code consumer} itself
     * @throws IllegalArgumentException naming the value if it is null, blank, too long or holds a control or
     *                                  surrogate character
     */
    static String validateConsumer(String consumer) {
        if (consumer == null) {
            throw new IllegalArgumentException("consumer must not be null");
        }
        if (consumer.isBlank() || consumer.length() > MAX_CONSUMER_LENGTH) {
            throw new IllegalArgumentException("consumer must be 1 to " + MAX_CONSUMER_LENGTH
                    + " characters and not blank: '" + consumer + "'");
        }
        for (int i = 0; i < consumer.length(); i++) {
            if (Character.isISOControl(consumer.charAt(i)) || Character.isSurrogate(consumer.charAt(i))) {
                throw new IllegalArgumentException("consumer '" + consumer + "' contains a control or surrogate"
                        + " character at index " + i);
            }
        }
        return consumer;
    }

    /** The longest consumer name. */
    int MAX_CONSUMER_LENGTH = 200;

    /**
     * The work done for a new message, on the caller's connection and in its transaction. It must not commit,
     * roll back or close the connection.
     */
    @FunctionalInterface
    interface Handler {
        /**
         * Does the work for a new message.
         *
         * @param connection the caller's connection, in its transaction
         * @throws Exception anything; {@link Inbox#process} wraps it in an {@link InboxHandlerException}
         */
        void handle(Connection connection) throws Exception;

    }
}
