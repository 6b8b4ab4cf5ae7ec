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

    /** Binds {@code uuid} (a leader id, a message id; null allowed) as the column type holds it. */
    void bindUuid(PreparedStatement statement, int index, UUID uuid) throws SQLException;

    /** Binds {@code at} (null allowed) as the dialect's statements compare it with a time column. */
    void bindInstant(PreparedStatement statement, int index, Instant at) throws SQLException;

    /** {@code at} as one value of a batch ({@link SqlWrite.Kind#PAIRS}): what {@link #bindInstant} binds. */
    Object instantValue(Instant at);

    /** The time in column {@code column} as the dialect's statements select it; null for SQL NULL. */
    Instant instant(ResultSet rs, int column) throws SQLException;

    /** The UUID in the column labelled {@code label}; null for SQL NULL. */
    UUID uuid(ResultSet rs, String label) throws SQLException;

    /**
     * The headers stored from column {@code column} on (one column or two, as the dialect stores them).
     *
     * @throws IllegalArgumentException naming what is wrong, for headers written by hand that are not valid
     */
    List<Header> headers(ResultSet rs, int column) throws SQLException;

    /** {@code reason} as the parked table's reason column can store it (cut, or with characters replaced). */
    String storable(String reason);
}
