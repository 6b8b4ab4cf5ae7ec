package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.RowChecks;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Reads one outbox row into a {@link MarkedRow}: a record, or a rejection naming what is wrong with it. Rows may
 * have been written by hand, by any language, so nothing about their columns is assumed. Stateless.
 */
final class RowReader {
    /** The columns the outbox shares with its parked table, in the order {@link #read} expects them. */
    static final String COLUMNS =
            "id, create_time, topic, key, value, header_names, header_values, leader_id, attempts, message_id";

    private RowReader() {
    }

    /**
     * The row's record, or its rejection by {@link RowChecks#check}: {@link #COLUMNS} followed by
     * {@code next_attempt_at}.
     */
    static MarkedRow read(ResultSet rs, int maxKeyLength) throws SQLException {
        return read(rs, 0, maxKeyLength);
    }

    /** As {@link #read(ResultSet, int)}, with the row's columns after the first {@code skip} of the result. */
    static MarkedRow read(ResultSet rs, int skip, int maxKeyLength) throws SQLException {
        int c = skip;
        OffsetDateTime created = rs.getObject(c + 2, OffsetDateTime.class);
        OffsetDateTime next = rs.getObject(c + 11, OffsetDateTime.class);
        return RowChecks.check(rs.getLong(c + 1), created == null ? null : created.toInstant(), rs.getString(c + 3),
                rs.getString(c + 4), rs.getBytes(c + 5), () -> headers(rs.getArray(c + 6), rs.getArray(c + 7)),
                rs.getInt(c + 9), rs.getObject(c + 8, UUID.class), rs.getObject(c + 10, UUID.class),
                next == null ? null : next.toInstant(), maxKeyLength);
    }

    /** The headers of the two parallel arrays; throws IllegalArgumentException naming what is wrong. */
    static List<Header> headers(Array namesArray, Array valuesArray) throws SQLException {
        if (namesArray == null) {
            throw new IllegalArgumentException("header_names is null (use an empty array for no headers)");
        }
        if (valuesArray == null) {
            throw new IllegalArgumentException("header_values is null (use an empty array for no headers)");
        }
        Object names = namesArray.getArray();
        Object values = valuesArray.getArray();
        if (!(names instanceof String[] nameList)) {
            throw new IllegalArgumentException("header_names is not a one-dimensional text array: "
                    + namesArray);
        }
        if (!(values instanceof byte[][] valueList)) {
            throw new IllegalArgumentException("header_values is not a one-dimensional bytea array: "
                    + describe(values));
        }
        if (nameList.length != valueList.length) {
            throw new IllegalArgumentException("header_names has " + nameList.length
                    + " elements but header_values has " + valueList.length + ": header_names = "
                    + String.join(", ", nullSafe(nameList)));
        }
        List<Header> headers = new ArrayList<>(nameList.length);
        for (int i = 0; i < nameList.length; i++) {
            if (nameList[i] == null) {
                throw new IllegalArgumentException("header_names[" + (i + 1) + "] is null");
            }
            if (nameList[i].isEmpty()) {
                throw new IllegalArgumentException("header_names[" + (i + 1) + "] is empty");
            }
            headers.add(Header.of(nameList[i], valueList[i]));
        }
        return headers;
    }

    private static String[] nullSafe(String[] names) {
        String[] copy = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            copy[i] = names[i] == null ? "NULL" : "'" + names[i] + "'";
        }
        return copy;
    }

    private static String describe(Object value) {
        return value == null ? "null" : value.getClass().getSimpleName();
    }
}
