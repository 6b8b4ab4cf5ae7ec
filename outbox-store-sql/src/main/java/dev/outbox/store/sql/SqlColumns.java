package dev.outbox.store.sql;

import dev.outbox.Header;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * How one database binds and reads the outbox's typed columns (a UUID, a time, the headers) and what text its
 * reason column can store: what the shared statements of {@link SqlStore} need besides their SQL. For store
 * implementations; implementations are stateless and thread-safe.
 */
public interface SqlColumns {

    /**
     * Binds {@code uuid} (a leader id, a message id; null allowed) as the column type holds it.
     *
     * @param statement the statement to bind
     * @param index     the parameter's index, from 1
     * @param uuid      the value, or null for SQL NULL
     * @throws SQLException as the driver throws it
     */
    void bindUuid(PreparedStatement statement, int index, UUID uuid) throws SQLException;

    /**
     * Binds {@code at} (null allowed) as the dialect's statements compare it with a time column.
     *
     * @param statement the statement to bind
     * @param index     the parameter's index, from 1
     * @param at        the time, or null for SQL NULL
     * @throws SQLException as the driver throws it
     */
    void bindInstant(PreparedStatement statement, int index, Instant at) throws SQLException;

    /**
     * {@code at} as one value of a batch ({@link SqlWrite.Kind#PAIRS}): what {@link #bindInstant} binds.
     *
     * @param at the time, or null
     * @return the value as the driver takes it in an array or with {@code setObject}; null for a null time
     */
    Object instantValue(Instant at);

    /**
     * The time in column {@code column} as the dialect's statements select it; null for SQL NULL.
     *
     * @param rs     the result set, on a row
     * @param column the column's index, from 1
     * @return the time, or null
     * @throws SQLException as the driver throws it
     */
    Instant instant(ResultSet rs, int column) throws SQLException;

    /**
     * The UUID in the column labelled {@code label}; null for SQL NULL.
     *
     * @param rs    the result set, on a row
     * @param label the column's label
     * @return the UUID, or null
     * @throws SQLException as the driver throws it
     */
    UUID uuid(ResultSet rs, String label) throws SQLException;

    /**
     * The headers stored from column {@code column} on (one column or two, as the dialect stores them).
     *
     * @param rs     the result set, on a row
     * @param column the index of the (first) headers column, from 1
     * @return the headers in their stored order; empty, never null, if there are none
     * @throws SQLException             as the driver throws it
     * @throws IllegalArgumentException naming what is wrong, for headers written by hand that are not valid
     */
    List<Header> headers(ResultSet rs, int column) throws SQLException;

    /**
     * {@code reason} as the parked table's reason column can store it (cut, or with characters replaced).
     *
     * @param reason the reason, not null
     * @return the reason as it is stored
     */
    String storable(String reason);

}
