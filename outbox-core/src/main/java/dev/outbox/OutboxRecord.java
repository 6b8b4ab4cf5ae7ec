package dev.outbox;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * A stored outbox row as a store hands it to the dispatcher: the database {@code id} (which orders records),
 * its creation time, the message, how many deliveries have failed so far, and the leader id that marked it.
 * Immutable and thread-safe.
 */
public final class OutboxRecord {
    private final long id;
    private final Instant createdAt;
    private final OutboxMessage message;
    private final int attempts;
    private final UUID leaderId;

    /**
     * @param id        the row's id, positive
     * @param createdAt when the row was written, not null
     * @param message   the message, not null
     * @param attempts  failed deliveries so far, not negative
     * @param leaderId  the leader id the row is marked with, or null for an unmarked row
     */
    public OutboxRecord(long id, Instant createdAt, OutboxMessage message, int attempts, UUID leaderId) {
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
    }

    public long id() {
        return id;
    }

    public Instant createdAt() {
        return createdAt;
    }

    public OutboxMessage message() {
        return message;
    }

    public String topic() {
        return message.topic();
    }

    public String key() {
        return message.key();
    }

    /** Failed deliveries recorded for this row before it was marked. */
    public int attempts() {
        return attempts;
    }

    /** The leader id this record was marked with, or null if it was not marked. */
    public UUID leaderId() {
        return leaderId;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutboxRecord r && id == r.id && attempts == r.attempts
                && createdAt.equals(r.createdAt) && message.equals(r.message) && Objects.equals(leaderId, r.leaderId);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(id);
    }

    @Override
    public String toString() {
        return "OutboxRecord{id=" + id + ", topic=" + message.topic() + ", key=" + message.key()
                + ", attempts=" + attempts + ", leaderId=" + leaderId + '}';
    }
}
