package dev.outbox;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * A stored outbox row as a store hands it to the dispatcher: the database {@code id} (which orders records),
 * its creation time, the message, how many deliveries have failed so far, the leader id that marked it, and the
 * message id (see {@link MessageIds}): the row's identity for consumers, which, unlike the database id, survives
 * park and replay. Immutable and thread-safe.
 */
public final class OutboxRecord {
    private final long id;
    private final Instant createdAt;
    private final OutboxMessage message;
    private final int attempts;
    private final UUID leaderId;
    private final UUID messageId;
    private final Instant nextAttemptAt;

    /**
     * A record without a message id, from a store that does not assign them.
     *
     * @param id        the row's id, positive
     * @param createdAt when the row was written, not null
     * @param message   the message, not null
     * @param attempts  failed deliveries so far, not negative
     * @param leaderId  the leader id the row is marked with, or null for an unmarked row
     */
    public OutboxRecord(long id, Instant createdAt, OutboxMessage message, int attempts, UUID leaderId) {
        this(id, createdAt, message, attempts, leaderId, null);
    }

    /**
     * A record without a next attempt time: it may be sent at once.
     *
     * @param id        the row's id, positive
     * @param createdAt when the row was written, not null
     * @param message   the message, not null
     * @param attempts  failed deliveries so far, not negative
     * @param leaderId  the leader id the row is marked with, or null for an unmarked row
     * @param messageId the message's id for consumers, or null if the store assigns none
     * @throws IllegalArgumentException if {@code id} is not positive or {@code attempts} is negative
     * @throws NullPointerException     if {@code createdAt} or {@code message} is null
     */
    public OutboxRecord(long id, Instant createdAt, OutboxMessage message, int attempts, UUID leaderId,
                        UUID messageId) {
        this(id, createdAt, message, attempts, leaderId, messageId, null);
    }

    /**
     * A record with every field.
     *
     * @param id            the row's id, positive
     * @param createdAt     when the row was written, not null
     * @param message       the message, not null
     * @param attempts      failed deliveries so far, not negative
     * @param leaderId      the leader id the row is marked with, or null for an unmarked row
     * @param messageId     the message's id for consumers, or null if the store assigns none
     * @param nextAttemptAt the earliest time the next delivery may be attempted (set by a failed delivery), or null
     *                      for at once
     * @throws IllegalArgumentException if {@code id} is not positive or {@code attempts} is negative
     * @throws NullPointerException     if {@code createdAt} or {@code message} is null
     */
    public OutboxRecord(long id, Instant createdAt, OutboxMessage message, int attempts, UUID leaderId,
                        UUID messageId, Instant nextAttemptAt) {
        if (id <= 0) {
            throw new IllegalArgumentException("id must be positive: " + id);
        }
        if (attempts < 0) {
            throw new IllegalArgumentException("attempts must not be negative: " + attempts + " (id " + id + ")");
        }
        this.id = id;
        this.createdAt = Objects.requireNonNull(createdAt, "createdAt");
        this.message = Objects.requireNonNull(message, "message");
        this.attempts = attempts;
        this.leaderId = leaderId;
        this.messageId = messageId;
        this.nextAttemptAt = nextAttemptAt;
    }

    /**
     * This record after one more failed delivery: {@code attempts} one higher, to be retried no earlier than
     * {@code nextAttemptAt}.
     *
     * @param nextAttemptAt the earliest time of the next attempt; not null
     * @return a new record; this one is unchanged
     * @throws NullPointerException if {@code nextAttemptAt} is null
     */
    public OutboxRecord failedOnce(Instant nextAttemptAt) {
        return new OutboxRecord(id, createdAt, message, attempts + 1, leaderId, messageId,
                Objects.requireNonNull(nextAttemptAt, "nextAttemptAt"));
    }

    /**
     * This record to be retried no earlier than {@code nextAttemptAt}, its attempts unchanged: a delivery that
     * failed through no fault of its own (a broker outage).
     *
     * @param nextAttemptAt the earliest time of the next attempt; not null
     * @return a new record; this one is unchanged
     * @throws NullPointerException if {@code nextAttemptAt} is null
     */
    public OutboxRecord retryAt(Instant nextAttemptAt) {
        return new OutboxRecord(id, createdAt, message, attempts, leaderId, messageId,
                Objects.requireNonNull(nextAttemptAt, "nextAttemptAt"));
    }

    /**
     * The row's database id, which orders records.
     *
     * @return the id, positive
     */
    public long id() {
        return id;
    }

    /**
     * When the row was written (by the database's clock; for a streamed outbox, its commit time).
     *
     * @return the creation time; never null
     */
    public Instant createdAt() {
        return createdAt;
    }

    /**
     * The message.
     *
     * @return the message; never null
     */
    public OutboxMessage message() {
        return message;
    }

    /**
     * The message's topic.
     *
     * @return {@code message().topic()}
     */
    public String topic() {
        return message.topic();
    }

    /**
     * The message's key.
     *
     * @return {@code message().key()}
     */
    public String key() {
        return message.key();
    }

    /**
     * Failed deliveries recorded for this row before it was marked.
     *
     * @return the count, 0 or more
     */
    public int attempts() {
        return attempts;
    }

    /**
     * The leader id this record was marked with, or null if it was not marked.
     *
     * @return the leader id, or null
     */
    public UUID leaderId() {
        return leaderId;
    }

    /**
     * The message's id for consumers (a version 7 UUID where the outbox assigned it), stable from the writer's
     * transaction through reset, park and replay; null if the store assigns none.
     *
     * @return the message id, or null
     */
    public UUID messageId() {
        return messageId;
    }

    /**
     * The earliest time the next delivery may be attempted, recorded with the last failed delivery; null when the
     * record may be sent at once.
     *
     * @return the time, or null
     */

    public Instant nextAttemptAt() {
        return nextAttemptAt;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutboxRecord r && id == r.id && attempts == r.attempts
                && createdAt.equals(r.createdAt) && message.equals(r.message) && Objects.equals(leaderId, r.leaderId)
                && Objects.equals(messageId, r.messageId) && Objects.equals(nextAttemptAt, r.nextAttemptAt);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(id);
    }

    @Override
    public String toString() {
        return "OutboxRecord{id=" + id + ", topic=" + message.topic() + ", key=" + dev.outbox.spi.Excerpt.of(message.key())
                + ", attempts=" + attempts + ", leaderId=" + leaderId + ", messageId=" + messageId
                + (nextAttemptAt == null ? "" : ", nextAttemptAt=" + nextAttemptAt) + '}';
    }
}
