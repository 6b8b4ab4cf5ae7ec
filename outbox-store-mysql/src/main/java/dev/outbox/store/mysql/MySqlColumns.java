package dev.outbox.store.mysql;

import dev.outbox.Header;
import dev.outbox.store.sql.SqlColumns;

import java.math.BigDecimal;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * How MySQL and MariaDB bind and read the outbox's typed columns: a UUID as {@code BINARY(16)}, a time as Unix
 * seconds with a microsecond fraction (selected as {@code UNIX_TIMESTAMP(...)}, compared through
 * {@code FROM_UNIXTIME}: exact whatever the session's and the driver's time zones), headers as one JSON column; a
 * reason is cut to {@value #MAX_REASON_LENGTH} characters and stripped of what utf8mb4 cannot store. Stateless and
 * thread-safe.
 */
final class MySqlColumns implements SqlColumns {
    static final MySqlColumns INSTANCE = new MySqlColumns();
    /** Reasons longer than this many characters are cut when a row is parked ({@code TEXT} holds 64 KiB). */
    static final int MAX_REASON_LENGTH = 8_000;

    private MySqlColumns() {
    }

    @Override
    public void bindUuid(PreparedStatement statement, int index, UUID uuid) throws SQLException {
        if (uuid == null) {
            statement.setNull(index, Types.BINARY);
        } else {
            statement.setBytes(index, RowReader.bytes(uuid));
        }
    }

    @Override
    public void bindInstant(PreparedStatement statement, int index, Instant at) throws SQLException {
        if (at == null) {
            statement.setNull(index, Types.DECIMAL);
        } else {
            statement.setBigDecimal(index, unixSeconds(at));
        }
    }

    @Override
    public Object instantValue(Instant at) {
        return unixSeconds(at);
    }

    @Override
    public Instant instant(ResultSet rs, int column) throws SQLException {
        return RowReader.instant(rs.getBigDecimal(column));
    }

    @Override
    public UUID uuid(ResultSet rs, String label) throws SQLException {
        return RowReader.uuid(rs.getBytes(label));
    }

    /** The {@code headers} JSON column. */
    @Override
    public List<Header> headers(ResultSet rs, int column) throws SQLException {
        return HeadersJson.read(rs.getString(column));
    }

    /** {@code reason}, cut to {@value #MAX_REASON_LENGTH} characters, with what utf8mb4 cannot store replaced. */
    @Override
    public String storable(String reason) {
        String text = reason.length() > MAX_REASON_LENGTH ? reason.substring(0, MAX_REASON_LENGTH) + "…" : reason;
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                out.append(c).append(text.charAt(++i));
            } else {
                out.append(Character.isSurrogate(c) ? '\uFFFD' : c); // utf8mb4 cannot store a lone surrogate
            }
        }
        return out.toString();
    }

    /** An instant as Unix seconds with a microsecond fraction, as {@code FROM_UNIXTIME} takes it. */
    static BigDecimal unixSeconds(Instant at) {
        return BigDecimal.valueOf(at.getEpochSecond()).add(BigDecimal.valueOf(at.getNano() / 1000, 6));
    }
}
