package dev.outbox.store.postgres;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Reads one outbox row into an {@link OutboxRecord}, or into a {@link MarkResult.Rejected} naming what is wrong
 * with it: rows may have been written by hand, by any language, so nothing about their columns is assumed.
 * Stateless and thread-safe.
 */
final class RowReader {
    /** The columns, in the order {@link #read} expects them. */
    static final String COLUMNS =
            "id, create_time, topic, key, value, header_names, header_values, leader_id, attempts, message_id";

    private final int maxKeyLength;

    RowReader(int maxKeyLength) {
        this.maxKeyLength = maxKeyLength;
    }

    /** Returns an {@link OutboxRecord} or a {@link MarkResult.Rejected}. */
    Object read(ResultSet rs) throws SQLException {
        long id = rs.getLong(1);
        String topic = rs.getString(3);
        String key = rs.getString(4);
        int attempts = rs.getInt(9);
        try {
            OffsetDateTime created = rs.getObject(2, OffsetDateTime.class);
            if (created == null) {
                throw new IllegalArgumentException("create_time is null");
            }
            if (key != null && key.length() > maxKeyLength) {
                throw new IllegalArgumentException("key is " + key.length() + " characters, longer than the"
                        + " store's maxKeyLength " + maxKeyLength + ": " + abbreviate(key));
            }
            List<Header> headers = headers(rs.getArray(6), rs.getArray(7));
            OutboxMessage message = OutboxMessage.of(topic, key, rs.getBytes(5), headers);
            UUID leaderId = rs.getObject(8, UUID.class);
            UUID messageId = rs.getObject(10, UUID.class);
            return new OutboxRecord(id, created.toInstant(), message, attempts, leaderId, messageId);
        } catch (IllegalArgumentException | ClassCastException e) {
            return new MarkResult.Rejected(id, topic, key, attempts, e.getMessage());
        }
    }

    private static List<Header> headers(Array namesArray, Array valuesArray) throws SQLException {
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

    /** A string for an error message: quoted, and cut after 40 characters. */
    static String abbreviate(String value) {
        return value.length() <= 40 ? "'" + value + "'" : "'" + value.substring(0, 40) + "…'";
    }

    private static String describe(Object value) {
        return value == null ? "null" : value.getClass().getSimpleName();
    }
}
