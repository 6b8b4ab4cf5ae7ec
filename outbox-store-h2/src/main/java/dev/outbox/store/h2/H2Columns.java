package dev.outbox.store.h2;

import dev.outbox.Header;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.RowChecks;
import dev.outbox.store.sql.SqlColumns;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * How H2 binds and reads the outbox's columns: {@code UUID} and {@code TIMESTAMP WITH TIME ZONE} as Java objects,
 * headers as two parallel arrays; and one row of the harvest ({@link H2Statements#COLUMNS}) as a record, or as a
 * rejection naming what is wrong with a row written by hand. Stateless and thread-safe.
 */
final class H2Columns implements SqlColumns {
    static final H2Columns INSTANCE = new H2Columns();

    private H2Columns() {
    }

    @Override
    public void bindUuid(PreparedStatement statement, int index, UUID uuid) throws SQLException {
        statement.setObject(index, uuid);
    }

    @Override
    public void bindInstant(PreparedStatement statement, int index, Instant at) throws SQLException {
        statement.setObject(index, instantValue(at));
    }

    @Override
    public Object instantValue(Instant at) {
        return at == null ? null : OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }

    @Override
    public Instant instant(ResultSet rs, int column) throws SQLException {
        OffsetDateTime at = rs.getObject(column, OffsetDateTime.class);
        return at == null ? null : at.toInstant();
    }

    @Override
    public UUID uuid(ResultSet rs, String label) throws SQLException {
        return rs.getObject(label, UUID.class);
    }

    /** The header_names and header_values arrays from {@code column} on. */
    @Override
    public List<Header> headers(ResultSet rs, int column) throws SQLException {
        Object[] names = (Object[]) rs.getArray(column).getArray(); // both columns are NOT NULL
        Object[] values = (Object[]) rs.getArray(column + 1).getArray();
        if (names.length != values.length) {
            throw new IllegalArgumentException("header_names has " + names.length + " elements but header_values has "
                    + values.length);
        }
        List<Header> headers = new ArrayList<>(names.length);
        for (int i = 0; i < names.length; i++) {
            if (!(names[i] instanceof String name) || name.isEmpty()
                    || !(values[i] == null || values[i] instanceof byte[])) {
                throw new IllegalArgumentException("header " + (i + 1) + " has a null or empty name or a value that"
                        + " is not binary: " + names[i]);
            }
            headers.add(Header.of(name, (byte[]) values[i]));
        }
        return headers;
    }

    /** Binds the headers as two parallel arrays, names and values, from {@code index}; returns the next index. */
    static int bindHeaders(Connection c, PreparedStatement s, int index, List<Header> headers) throws SQLException {
        s.setArray(index, c.createArrayOf("VARCHAR", headers.stream().map(Header::name).toArray()));
        s.setArray(index + 1, c.createArrayOf("VARBINARY", headers.stream().map(Header::value).toArray()));
        return index + 2;
    }

    /** H2's text holds any string. */
    @Override
    public String storable(String reason) {
        return reason;
    }

    /** The harvest's row at the result's cursor, carrying its stored leader id. */
    MarkedRow row(ResultSet rs, int maxKeyLength) throws SQLException {
        return RowChecks.check(rs.getLong(1), instant(rs, 2), rs.getString(3), rs.getString(4), rs.getBytes(5),
                () -> headers(rs, 6), rs.getInt(9), rs.getObject(8, UUID.class), rs.getObject(10, UUID.class),
                instant(rs, 11), maxKeyLength);
    }
}
