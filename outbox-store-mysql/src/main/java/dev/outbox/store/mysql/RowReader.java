package dev.outbox.store.mysql;

import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.RowChecks;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;

/**
 * Reads one outbox row into a {@link MarkedRow}: a record, or a rejection naming what is wrong with it. Rows may
 * have been written by hand, by any language, so nothing about their columns is assumed. Stateless.
 */
final class RowReader {
    /**
     * The columns, in the order {@link #read} expects them. The creation time is read as a Unix timestamp (seconds
     * with a fraction): MySQL converts a {@code TIMESTAMP} column to it without going through the session's or the
     * driver's time zone, so the instant is exact whatever {@code time_zone} and {@code connectionTimeZone} are.
     */
    static final String COLUMNS =
            "id, UNIX_TIMESTAMP(create_time), topic, `key`, value, headers, leader_id, attempts, message_id,"
                    + " UNIX_TIMESTAMP(next_attempt_at)";

    private RowReader() {
    }

    /** The row's record, carrying {@code leaderId} (the mark's new one), or its rejection by {@link RowChecks#check}. */
    static MarkedRow read(ResultSet rs, UUID leaderId, int maxKeyLength) throws SQLException {
        String headers = rs.getString(6);
        return RowChecks.check(rs.getLong(1), instant(rs.getBigDecimal(2)), rs.getString(3), rs.getString(4),
                rs.getBytes(5), () -> HeadersJson.read(headers), rs.getInt(8), leaderId, uuid(rs.getBytes(9)),
                instant(rs.getBigDecimal(10)), maxKeyLength);
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
}
