package dev.outbox;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Message ids: time-ordered UUIDs of version 7 (RFC 9562), which every outbox row gets when it is written and
 * keeps through reset, park and replay, so that a consumer can tell a redelivery from a new message.
 *
 * <p>Layout: 48 bits of Unix time in milliseconds, the version (7), 12 bits that count within a millisecond, the
 * variant, and 62 random bits. Within one JVM the ids are strictly increasing (the counter carries into the
 * time field if more than 4,096 ids are taken in one millisecond, and a clock that steps back does not take the
 * ids back), so a batch published in one call gets ids in list order. Across JVMs they are unique by their random
 * bits and ordered by time to the millisecond.
 *
 * <p>Thread-safe; a utility class.
 */
public final class MessageIds {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The last (milliseconds &lt;&lt; 12 | counter) handed out. */
    private static final AtomicLong LAST = new AtomicLong();

    private MessageIds() {
    }

    /**
     * A new, unique version 7 UUID. Thread-safe; the ids one JVM makes increase in time order, even when the wall
     * clock steps back or several are made in one millisecond.
     *
     * @return the id
     */
    public static UUID next() {
        long now = System.currentTimeMillis() << 12;
        long stamp = LAST.updateAndGet(last -> Math.max(now, last + 1));
        long millis = stamp >>> 12;
        long counter = stamp & 0xFFF;
        long msb = (millis & 0xFFFF_FFFF_FFFFL) << 16 | 0x7000L | counter;
        long lsb = (RANDOM.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    /**
     * The millisecond timestamp of a version 7 id, or -1 for an id of another version.
     *
     * @param id the id; not null
     * @return milliseconds since the Unix epoch, or -1
     * @throws NullPointerException if {@code id} is null
     */
    public static long unixMillis(UUID id) {
        Objects.requireNonNull(id, "id must not be null");
        return id.version() == 7 ? id.getMostSignificantBits() >>> 16 : -1;
    }

    /**
     * Reads a message id from header bytes. The outbox writes the id as its 36-character text form in ASCII; that
     * is parsed (in either case). Any other value (an id some other producer wrote) is turned into a name-based UUID (version 3)
     * of its bytes, so that equal values always give equal ids.
     *
     * @param value the header's bytes
     * @return the id
     * @throws IllegalArgumentException if {@code value} is null or empty
     */
    public static UUID fromHeader(byte[] value) {
        if (value == null || value.length == 0) {
            throw new IllegalArgumentException("a message id header must have a value");
        }
        if (value.length == 36) {
            try {
                UUID parsed = UUID.fromString(new String(value, StandardCharsets.US_ASCII));
                if (parsed.toString().equals(new String(value, StandardCharsets.US_ASCII).toLowerCase(
                        java.util.Locale.ROOT))) {
                    return parsed;
                }
            } catch (IllegalArgumentException e) {
                // not a UUID in text form: hashed below
            }
        }
        return UUID.nameUUIDFromBytes(value);
    }

    /**
     * The header value the outbox writes for {@code id}: its text form in ASCII.
     *
     * @param id the id; not null
     * @return 36 bytes, the lower-case text form
     * @throws NullPointerException if {@code id} is null
     */

    public static byte[] toHeader(UUID id) {
        return Objects.requireNonNull(id, "id must not be null").toString().getBytes(StandardCharsets.US_ASCII);
    }
}
