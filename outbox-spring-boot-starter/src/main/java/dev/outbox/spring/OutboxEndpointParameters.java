package dev.outbox.spring;

import dev.outbox.ParkedQuery;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Reads the {@link OutboxEndpoint}'s parameters as given (text from a query string, numbers or text from a JSON
 * body), each failure an {@link InvalidEndpointRequestException} (a 400) naming the parameter and its value.
 * Stateless.
 */
final class OutboxEndpointParameters {
    private static final Pattern UUID_TEXT = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern WHOLE_NUMBER = Pattern.compile("[0-9]{1,18}");

    private OutboxEndpointParameters() {
    }

    /** The store's query for the filters as given (blank means not given) and the page. */
    static ParkedQuery query(@Nullable String topic, @Nullable String key, @Nullable String reason,
                             @Nullable String messageId, @Nullable String parkedFrom, @Nullable String parkedBefore,
                             long after, int limit) {
        Instant from = instant("parkedFrom", parkedFrom);
        Instant before = instant("parkedBefore", parkedBefore);
        if (from != null && before != null && !from.isBefore(before)) {
            throw OutboxEndpoint.bad("parkedFrom must be before parkedBefore: '" + parkedFrom + "' is not before '"
                    + parkedBefore + "'");
        }
        return new ParkedQuery(topic, key, reason, uuid("messageId", messageId), from, before, after, limit);
    }

    /** The record ids of a write operation's {@code ids}: 1 to {@code max} positive whole numbers, comma-separated. */
    static List<Long> ids(@Nullable String ids, int max) {
        if (ids == null || ids.isBlank()) {
            throw OutboxEndpoint.bad("ids must list at least one parked record's id, e.g. {\"ids\": \"42,43\"}");
        }
        String[] parts = ids.split(",");
        if (parts.length > max) {
            throw OutboxEndpoint.bad("ids must list at most " + max + " records: " + parts.length + " given");
        }
        List<Long> result = new ArrayList<>(parts.length);
        for (String part : parts) {
            String id = part.strip();
            if (!WHOLE_NUMBER.matcher(id).matches() || Long.parseLong(id) < 1) {
                throw OutboxEndpoint.bad("ids must be the parked records' ids, positive whole numbers separated by"
                        + " commas: '" + id + "' is not one");
            }
            result.add(Long.parseLong(id));
        }
        return List.copyOf(result);
    }

    private static @Nullable Instant instant(String name, @Nullable String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        try {
            return Instant.parse(value.strip());
        } catch (DateTimeParseException e) {
            throw OutboxEndpoint.bad(name + " must be an instant in UTC such as 2025-01-31T12:00:00Z: '" + value
                    + "'");
        }
    }

    private static @Nullable UUID uuid(String name, @Nullable String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        if (!UUID_TEXT.matcher(value.strip()).matches()) {
            throw OutboxEndpoint.bad(name + " must be a message id, a UUID such as"
                    + " 0190a6d2-7e1c-7b3a-9c4f-2d5e6f708192: '" + value + "'");
        }
        return UUID.fromString(value.strip());
    }
}
