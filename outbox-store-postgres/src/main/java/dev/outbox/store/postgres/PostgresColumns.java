package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.store.sql.SqlColumns;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

/**
 * How Postgres binds and reads the outbox's typed columns: {@code uuid} as a {@link UUID}, {@code timestamptz} read
 * as an {@link OffsetDateTime} and bound as ISO-8601 text that the statements cast (a null needs no JDBC type, an
 * instant keeps its zone), headers as two parallel arrays. Stateless and thread-safe.
 */
final class PostgresColumns implements SqlColumns {
    static final PostgresColumns INSTANCE = new PostgresColumns();

    private PostgresColumns() {
    }

    @Override
    public void bindUuid(PreparedStatement statement, int index, UUID uuid) throws SQLException {
        if (uuid == null) {
            statement.setNull(index, Types.OTHER);
        } else {
            statement.setObject(index, uuid);
        }
    }

    @Override
    public void bindInstant(PreparedStatement statement, int index, Instant at) throws SQLException {
        statement.setString(index, at == null ? null : at.toString());
    }

    @Override
    public Object instantValue(Instant at) {
        return at.toString();
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
        return RowReader.headers(rs.getArray(column), rs.getArray(column + 1));
    }

    /** Postgres text cannot hold U+0000. */
    @Override
    public String storable(String reason) {
        return reason.replace("\u0000", "\\u0000");
    }
}
