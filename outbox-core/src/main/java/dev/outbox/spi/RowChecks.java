package dev.outbox.spi;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * The checks every store applies to a row, in one place so that they mean the same on every database: what a
 * publisher accepts and what a marked row must be to count as a message. Lengths of keys are counted in Unicode
 * code points (a character outside the Basic Multilingual Plane, such as an emoji, counts once), which is what
 * {@code VARCHAR(n)} counts in MySQL and {@code varchar(n)} in Postgres. Stateless and thread-safe.
 */
public final class RowChecks {
    private static final int ABBREVIATE_AFTER = 40;

    private RowChecks() {
    }

    /**
     * Reads a row's headers from however the store holds them; a hand-written row may hold anything there.
     *
     * @param <E> what reading the headers may throw besides {@link IllegalArgumentException}
     */
    @FunctionalInterface
    public interface HeaderColumns<E extends Exception> {
        /**
         * The row's headers.
         *
         * @return the headers in their stored order; not null, no null element
         * @throws E                        if reading fails otherwise (a lost connection, say)
         * @throws IllegalArgumentException naming what is wrong with the stored headers
         */
        List<Header> read() throws E;
    }

    /**
     * The length of {@code key} in code points, the unit of every store's {@code maxKeyLength}.
     *
     * @param key the key; not null
     * @return its length in code points (a surrogate pair counts once, a lone surrogate once)
     */
    public static int keyLength(String key) {
        return key.codePointCount(0, key.length());
    }

    /**
     * Checks that {@code key} is at most {@code maxKeyLength} code points long.
     *
     * @param key          the key; not null
     * @param maxKeyLength the store's longest key, in code points
     * @throws IllegalArgumentException naming the length, the limit and the key (abbreviated)
     */
    public static void checkKeyLength(String key, int maxKeyLength) {
        int length = keyLength(key);
        if (length > maxKeyLength) {
            throw new IllegalArgumentException("key is " + length + " characters, longer than the store's"
                    + " maxKeyLength " + maxKeyLength + ": " + abbreviate(key));
        }
    }

    /**
     * The one check of a marked row, as the store read it: a {@link MarkedRow.Readable} record if it is a valid
     * message, else a {@link MarkResult.Rejected} whose reason names the first bad value. A row is rejected if its
     * creation time is null, its key is longer than {@code maxKeyLength} code points, its attempts are negative,
     * its headers cannot be read (the store's {@code headers} throws {@link IllegalArgumentException}) or it is
     * not a valid {@link OutboxMessage} (null key, invalid topic, …).
     *
     * @param id           the row's id
     * @param createdAt    its creation time, null if the column is null
     * @param topic        its topic as stored
     * @param key          its key as stored
     * @param value        its value as stored
     * @param headers      reads its headers
     * @param attempts     its attempts as stored
     * @param leaderId     the leader id the record carries
     * @param maxKeyLength the store's longest key, in code points
     * @param <E>          what reading the headers may throw
     * @return a {@link MarkedRow.Readable} (without a message id or next attempt time) or a
     *         {@link MarkResult.Rejected}
     * @throws E if reading the headers fails otherwise (a lost connection, say)
     */
    public static <E extends Exception> MarkedRow check(long id, Instant createdAt, String topic, String key,
                                                        byte[] value, HeaderColumns<E> headers, int attempts,
                                                        UUID leaderId, int maxKeyLength) throws E {
        return check(id, createdAt, topic, key, value, headers, attempts, leaderId, null, maxKeyLength);
    }

    /**
     * {@link #check(long, Instant, String, String, byte[], HeaderColumns, int, UUID, int)} of a row with a message
     * id; {@code messageId} null for a row that has none (yet).
     *
     * @param id           the row's id
     * @param createdAt    its creation time, null if the column is null
     * @param topic        its topic as stored
     * @param key          its key as stored
     * @param value        its value as stored
     * @param headers      reads its headers
     * @param attempts     its attempts as stored
     * @param leaderId     the leader id the record carries
     * @param messageId    its message id, or null
     * @param maxKeyLength the store's longest key, in code points
     * @param <E>          what reading the headers may throw
     * @return a {@link MarkedRow.Readable} or a {@link MarkResult.Rejected}
     * @throws E if reading the headers fails otherwise (a lost connection, say)
     */
    public static <E extends Exception> MarkedRow check(long id, Instant createdAt, String topic, String key,
                                                        byte[] value, HeaderColumns<E> headers, int attempts,
                                                        UUID leaderId, UUID messageId, int maxKeyLength) throws E {
        return check(id, createdAt, topic, key, value, headers, attempts, leaderId, messageId, null, maxKeyLength);
    }

    /**
     * {@link #check(long, Instant, String, String, byte[], HeaderColumns, int, UUID, UUID, int)} of a row whose last
     * failed delivery set the time of its next attempt, {@code nextAttemptAt} (null: at once).
     *
     * @param id            the row's id
     * @param createdAt     its creation time, null if the column is null
     * @param topic         its topic as stored
     * @param key           its key as stored
     * @param value         its value as stored
     * @param headers       reads its headers
     * @param attempts      its attempts as stored
     * @param leaderId      the leader id the record carries
     * @param messageId     its message id, or null
     * @param nextAttemptAt the time of its next attempt, or null for at once
     * @param maxKeyLength  the store's longest key, in code points
     * @param <E>           what reading the headers may throw
     * @return a {@link MarkedRow.Readable} or a {@link MarkResult.Rejected} (whose attempts are clamped to 0 or
     *         more)
     * @throws E if reading the headers fails otherwise (a lost connection, say)
     */
    public static <E extends Exception> MarkedRow check(long id, Instant createdAt, String topic, String key,
                                                        byte[] value, HeaderColumns<E> headers, int attempts,
                                                        UUID leaderId, UUID messageId, Instant nextAttemptAt,
                                                        int maxKeyLength) throws E {
        try {
            if (createdAt == null) {
                throw new IllegalArgumentException("create_time is null");
            }
            if (key != null) {
                checkKeyLength(key, maxKeyLength);
            }
            if (attempts < 0) {
                throw new IllegalArgumentException("attempts is negative: " + attempts);
            }
            OutboxMessage message = OutboxMessage.of(topic, key, value, headers.read());
            return new MarkedRow.Readable(new OutboxRecord(id, createdAt, message, attempts, leaderId, messageId,
                    nextAttemptAt));
        } catch (IllegalArgumentException | ClassCastException e) {
            return new MarkResult.Rejected(id, topic, key, Math.max(0, attempts), e.getMessage());
        }
    }

    /**
     * {@code value} for an error message: quoted, and cut after 40 characters.
     *
     * @param value the text; not null
     * @return {@code value} in single quotes, its first 40 chars (39 rather than split a surrogate pair) and an
     *         ellipsis if it is longer
     */

    public static String abbreviate(String value) {
        if (value.length() <= ABBREVIATE_AFTER) {
            return "'" + value + "'";
        }
        int end = ABBREVIATE_AFTER;
        if (Character.isHighSurrogate(value.charAt(end - 1))) {
            end--; // never cut a pair in two
        }
        return "'" + value.substring(0, end) + "…'";
    }
}
