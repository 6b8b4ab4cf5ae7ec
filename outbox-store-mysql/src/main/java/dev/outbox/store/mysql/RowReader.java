package dev.outbox.store.mysql;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * Reads one outbox row into an {@link OutboxRecord}, or into a {@link MarkResult.Rejected} naming what is wrong
 * with it: rows may have been written by hand, by any language, so nothing about their columns is assumed.
 * Stateless and thread-safe.
 */
final class RowReader {
    /**
     * The columns, in the order {@link #read} expects them. The creation time is read as a Unix timestamp (seconds
     * with a fraction): MySQL converts a {@code TIMESTAMP} column to it without going through the session's or the
     * driver's time zone, so the instant is exact whatever {@code time_zone} and {@code connectionTimeZone} are.
     */
    static final String COLUMNS =
            "id, UNIX_TIMESTAMP(create_time), topic, `key`, value, headers, leader_id, attempts, message_id";

    private final int maxKeyLength;

    RowReader(int maxKeyLength) {
        this.maxKeyLength = maxKeyLength;
    }

    /**
     * Returns an {@link OutboxRecord}, carrying {@code leaderId} as its leader id (the mark's new one), or a
     * {@link MarkResult.Rejected}.
     */
    Object read(ResultSet rs, UUID leaderId) throws SQLException {
        long id = rs.getLong(1);
        String topic = rs.getString(3);
        String key = rs.getString(4);
        int attempts = rs.getInt(8);
        try {
            Instant created = instant(rs.getBigDecimal(2));
            if (created == null) {
                throw new IllegalArgumentException("create_time is null");
            }
            if (key != null && key.codePointCount(0, key.length()) > maxKeyLength) {
                throw new IllegalArgumentException("key is " + key.codePointCount(0, key.length())
                        + " characters, longer than the store's maxKeyLength " + maxKeyLength + ": "
                        + abbreviate(key));
            }
            if (attempts < 0) {
                throw new IllegalArgumentException("attempts is negative: " + attempts);
            }
            List<Header> headers = HeadersJson.read(rs.getString(6));
            OutboxMessage message = OutboxMessage.of(topic, key, rs.getBytes(5), headers);
            return new OutboxRecord(id, created, message, attempts, leaderId, uuid(rs.getBytes(9)));
        } catch (IllegalArgumentException e) {
            return new MarkResult.Rejected(id, topic, key, Math.max(0, attempts), e.getMessage());
        }
    }

    /** The instant of a {@code UNIX_TIMESTAMP(...)} value, or null. */
    static Instant instant(BigDecimal unixSeconds) {
        if (unixSeconds == null) {
            return null;
        }
        long seconds = unixSeconds.longValue();
        int nanos = unixSeconds.subtract(BigDecimal.valueOf(seconds)).movePointRight(9).intValue();
        return Instant.ofEpochSecond(seconds, nanos);
    }

    /** The UUID of 16 bytes, most significant first; null for null or for any other length. */
    static UUID uuid(byte[] bytes) {
        if (bytes == null || bytes.length != 16) {
            return null;
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        return new UUID(buffer.getLong(), buffer.getLong());
    }

    /** The 16 bytes of a {@code BINARY(16)} leader id, most significant first. */
    static byte[] bytes(UUID uuid) {
        return ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits())
                .putLong(uuid.getLeastSignificantBits()).array();
    }

    /** A string for an error message: quoted, and cut after 40 characters. */
    static String abbreviate(String value) {
        return value.length() <= 40 ? "'" + value + "'" : "'" + value.substring(0, 40) + "…'";
    }
}
