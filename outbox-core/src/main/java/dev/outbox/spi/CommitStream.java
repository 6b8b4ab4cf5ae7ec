package dev.outbox.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * An open stream of committed messages, in commit order, from a database's log (a Postgres logical replication
 * slot): the source of a stream harvest. A stream is opened by the leader when it starts harvesting and
 * closed when it stops; the database remembers the position the harvest {@linkplain #confirm confirmed}, and the
 * next stream, by this leader or another, starts with the first transaction that ended after it. So every message
 * is delivered at least once, and a message is delivered again only if it was not confirmed.
 *
 * <p>Positions are the log's (on Postgres, LSNs as unsigned 64-bit numbers compared with
 * {@link Long#compareUnsigned}); within one stream the messages' {@linkplain StreamMessage#endPosition() end
 * positions} never decrease.
 *
 * <p>Thread-safety: {@link #poll} is called by one thread at a time; {@link #confirm}, {@link #readPosition} and
 * {@link #close} may be called from any thread.
 */
public interface CommitStream extends AutoCloseable {

    /**
     * The next messages of the stream, at most {@code max}, in commit order (all messages of one transaction,
     * in the order the transaction wrote them, before any message of a later transaction). Waits up to
     * {@code wait} for the first message; returns an empty list if none arrived in time.
     *
     * @param max  the most messages to return, at least 1
     * @param wait the longest wait for the first message; zero to take only what is buffered
     * @return the messages, in commit order; empty if none arrived in time
     * @throws StoreException if the stream failed or was closed (it stays closed: the harvest opens a new one)
     */
    List<StreamMessage> poll(int max, Duration wait);

    /**
     * Cuts short a {@link #poll} that is waiting for a message: it returns at once (empty, if nothing arrived); if none
     * is waiting, the next poll that would wait returns at once instead. May be called from any thread. The default
     * does nothing: a poll then waits as long as it was asked to.
     */
    default void wakeup() {
    }

    /**
     * Every message of every transaction that ended at or before {@code position} has been handled (published
     * or parked): the database may forget them, and a stream opened later starts after them. Positions confirmed
     * must never decrease; a lower one than before is ignored. Sending it to the database may happen later (with
     * the stream's next status update), never sooner than this call.
     *
     * @param position a transaction's end position ({@link StreamMessage#endPosition()}) or a
     *                 {@link #readPosition()}
     */
    void confirm(long position);

    /**
     * The position up to which this stream has read the log and handed out every message for this outbox,
     * whether or not the log carried any there (transactions of other tables, keep-alives); 0 before anything
     * was read. It never passes the end position of a message that {@link #poll} has not returned yet (a
     * message read from the database but still buffered by the stream). When no message is pending, the
     * harvest confirms it, so that an idle outbox does not hold the log back.
     *
     * @return the position, 0 or more
     */
    long readPosition();

    /** Closes the stream and releases what it holds in the database (the slot), at once. Idempotent. */
    @Override
    void close();

    /**
     * One message of a committed transaction.
     *
     * @param position    the message's own position in the log; unique among all messages of the database
     * @param endPosition the position at which the message's transaction ended (shared by all its messages):
     *                    what {@link #confirm} is given once all of them are handled
     * @param commitTime  when the transaction committed
     * @param payload     the message as the writer emitted it; the harvest decodes it
     */
    record StreamMessage(long position, long endPosition, Instant commitTime, byte[] payload) {
        /**
         * Checks the components.
         *
         * @param position    the message's own position in the log
         * @param endPosition the position at which its transaction ended
         * @param commitTime  when the transaction committed; not null
         * @param payload     the message as emitted; not null (not copied)
         * @throws IllegalArgumentException if {@code commitTime} or {@code payload} is null
         */
        public StreamMessage {

            if (commitTime == null || payload == null) {
                throw new IllegalArgumentException("commitTime and payload must not be null");
            }
        }
    }
}
