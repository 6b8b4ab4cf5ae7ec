package dev.outbox.spi;

import java.time.Duration;

/**
 * A {@link Store} capability: messages that must not be sent before a time
 * ({@link dev.outbox.OutboxMessage#deliverAt()}, {@link dev.outbox.OutboxMessage#deliverAfter()}) wait in a place
 * of their own beside the outbox, and the leading dispatcher moves those that are due into the outbox, where both
 * harvests find them like any other row. So a delayed message never holds the harvest, the in-flight window or a
 * cursor; and the due time is the database's clock, never the dispatcher's.
 *
 * <p>Per-key order: a store that keeps its keys' order ("hold the key", the default) also puts a message without a
 * time behind its key's waiting messages, and moves a key's messages in the order they were written, never one
 * before an earlier one of its key that is not yet due. A moved message takes a new outbox id, after every row
 * already there.
 *
 * <p>Several dispatchers may call {@link #releaseDue} at once (a deposed leader that has not noticed yet): a message
 * is moved once, never twice, whoever calls.
 */
public interface ScheduledMessages {

    /**
     * Moves up to {@code limit} messages that are due (by the database's clock) into the outbox, in one transaction.
     *
     * @param limit the most messages to move; at least 1
     * @return how many were moved, and when the next waiting message is due
     */
    Release releaseDue(int limit);

    /**
     * What a {@link #releaseDue} call did.
     *
     * @param moved   the messages moved into the outbox
     * @param nextDue how long until the earliest message still waiting is due, by the database's clock ({@link
     *                Duration#ZERO} if one is due already); null if none is waiting
     */
    record Release(int moved, Duration nextDue) {
        /**
         * @param moved   the messages moved, zero or more
         * @param nextDue the time until the next is due (a negative one is zero), or null if none is waiting
         * @throws IllegalArgumentException if {@code moved} is negative
         */
        public Release {
            if (moved < 0) {
                throw new IllegalArgumentException("moved must not be negative: " + moved);
            }
            if (nextDue != null && nextDue.isNegative()) {
                nextDue = Duration.ZERO;
            }
        }
    }
}
