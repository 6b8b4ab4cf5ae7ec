package dev.outbox;

import java.time.Instant;
import java.util.UUID;

/**
 * A row that will not be retried: it failed {@code maxAttempts} times, the broker said it can never succeed,
 * or it could not even be read as a message (a row written by hand with inconsistent columns). It stays in
 * the store's parked area until an operator replays or deletes it. Immutable.
 *
 * @param id        the row's id in the outbox when it was parked
 * @param topic     its topic as stored (may be invalid, which can be why it was parked)
 * @param key       its key as stored, or null if the row had none
 * @param attempts  failed deliveries counted before it was parked
 * @param reason    why it was parked, for a human
 * @param parkedAt  when it was parked, or null where the store does not record it
 * @param messageId the message's id ({@link MessageIds}), kept through park and replay; null where it is not known
 *                  (a row older than the store's message id column, or a report that does not carry it)
 */
public record ParkedRecord(long id, String topic, String key, int attempts, String reason, Instant parkedAt,
                           UUID messageId) {

    /**
     * A parked row whose message id is not known.
     *
     * @param id       the row's id in the outbox when it was parked
     * @param topic    its topic as stored
     * @param key      its key as stored, or null
     * @param attempts failed deliveries counted before it was parked
     * @param reason   why it was parked
     * @param parkedAt when it was parked, or null
     */

    public ParkedRecord(long id, String topic, String key, int attempts, String reason, Instant parkedAt) {
        this(id, topic, key, attempts, reason, parkedAt, null);
    }
}
