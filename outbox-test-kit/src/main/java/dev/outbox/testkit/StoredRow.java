package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.ParkedRecord;

import java.time.Instant;
import java.util.UUID;

/**
 * A row of an {@link InMemoryStore} as held, committed or parked. Not thread-safe: fields other than the final ones
 * are guarded by the store's lock.
 */
final class StoredRow {
    final long id;
    final Instant createdAt;
    final String topic;
    final String key;
    final OutboxMessage message;
    final String malformedReason;
    /** The message id: assigned when the row is written, kept through park and replay. */
    UUID messageId = dev.outbox.MessageIds.next();
    UUID leaderId;
    int attempts;
    Instant nextAttemptAt;
    /** The row's shard, computed from its key on first use ({@link InMemoryFences#inShard}). */
    int shard = -1;
    String parkReason;
    Instant parkedAt;

    StoredRow(long id, Instant createdAt, String topic, String key, OutboxMessage message,
              String malformedReason) {
        this.id = id;
        this.createdAt = createdAt;
        this.topic = topic;
        this.key = key;
        this.message = message;
        this.malformedReason = malformedReason;
    }

    static StoredRow of(long id, Instant createdAt, OutboxMessage message) {
        return new StoredRow(id, createdAt, message.topic(), message.key(), message, null);
    }

    ParkedRecord toParked() {
        return new ParkedRecord(id, topic, key, attempts, parkReason, parkedAt);
    }
}
