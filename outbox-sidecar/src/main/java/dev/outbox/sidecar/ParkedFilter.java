package dev.outbox.sidecar;

import dev.outbox.ParkedQuery;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The filters an operator lists parked records by, and replays or discards all those matching: the API's query
 * parameters (and a bulk request's {@code filter}), the console's filter form. Every one is optional; all given must
 * match. Immutable.
 *
 * @param topic        exactly this topic
 * @param key          exactly this key
 * @param reason       a reason containing this text
 * @param messageId    this message id
 * @param parkedFrom   parked at or after this instant
 * @param parkedBefore parked before this instant
 */
record ParkedFilter(String topic, String key, String reason, UUID messageId, Instant parkedFrom,
                    Instant parkedBefore) {
    /** The parameter names, as the API and the console's form spell them. */
    static final String TOPIC = "topic";
    static final String KEY = "key";
    static final String REASON = "reason";
    static final String MESSAGE_ID = "messageId";
    static final String PARKED_FROM = "parkedFrom";
    static final String PARKED_BEFORE = "parkedBefore";

    private static final Pattern UUID_TEXT = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    /** No filter: every parked record. */
    static final ParkedFilter NONE = new ParkedFilter(null, null, null, null, null, null);

    ParkedFilter {
        topic = blankToNull(topic);
        key = blankToNull(key);
        reason = blankToNull(reason);
    }

    /**
     * The filter from its parameters as given (text; blank means not given). {@code prefix} is put before each name
     * in an error message ({@code "filter."} for a bulk request's body).
     *
     * @throws ResponseStatusException 400 naming the parameter and its value, if one is not valid
     */
    static ParkedFilter parse(String prefix, String topic, String key, String reason, String messageId,
                              String parkedFrom, String parkedBefore) {
        Instant from = instant(prefix + PARKED_FROM, parkedFrom);
        Instant before = instant(prefix + PARKED_BEFORE, parkedBefore);
        if (from != null && before != null && !from.isBefore(before)) {
            throw badRequest(prefix + PARKED_FROM + " must be before " + prefix + PARKED_BEFORE + ": '" + parkedFrom
                    + "' is not before '" + parkedBefore + "'");
        }
        return new ParkedFilter(topic, key, reason, messageId(prefix + MESSAGE_ID, messageId), from, before);
    }

    /** The store's query for one page of this filter's records. */
    ParkedQuery query(long afterId, int limit) {
        return new ParkedQuery(topic, key, reason, messageId, parkedFrom, parkedBefore, afterId, limit);
    }

    /** Whether no filter is set. */
    boolean isEmpty() {
        return parameters().isEmpty();
    }

    /** The filters set, by parameter name, as text (instants in ISO-8601), in the order of the form. */
    Map<String, String> parameters() {
        Map<String, String> p = new LinkedHashMap<>();
        put(p, TOPIC, topic);
        put(p, KEY, key);
        put(p, REASON, reason);
        put(p, MESSAGE_ID, messageId == null ? null : messageId.toString());
        put(p, PARKED_FROM, parkedFrom == null ? null : parkedFrom.toString());
        put(p, PARKED_BEFORE, parkedBefore == null ? null : parkedBefore.toString());
        return p;
    }

    /** For a human: {@code topic 'orders', reason containing 'too large'}, or {@code no filter}. */
    String describe() {
        List<String> parts = new ArrayList<>();
        if (topic != null) {
            parts.add("topic " + quoted(topic));
        }
        if (key != null) {
            parts.add("key " + quoted(key));
        }
        if (reason != null) {
            parts.add("reason containing " + quoted(reason));
        }
        if (messageId != null) {
            parts.add("message id " + messageId);
        }
        if (parkedFrom != null) {
            parts.add("parked from " + parkedFrom);
        }
        if (parkedBefore != null) {
            parts.add("parked before " + parkedBefore);
        }
        return parts.isEmpty() ? "no filter" : String.join(", ", parts);
    }

    /** The message id {@code value} (a UUID in text, either case), null when blank; a 400 naming {@code name}. */
    static UUID messageId(String name, String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        String v = value.strip();
        if (!UUID_TEXT.matcher(v).matches()) {
            throw badRequest(name + " must be a message id, a UUID such as 0190a6d2-7e1c-7b3a-9c4f-2d5e6f708192: '"
                    + value + "'");
        }
        return UUID.fromString(v);
    }

    private static Instant instant(String name, String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        try {
            return Instant.parse(value.strip());
        } catch (DateTimeParseException e) {
            throw badRequest(name + " must be an instant in UTC such as 2025-01-31T12:00:00Z: '" + value + "'");
        }
    }

    private static ResponseStatusException badRequest(String reason) {
        return new ResponseStatusException(HttpStatus.BAD_REQUEST, reason);
    }

    private static void put(Map<String, String> p, String name, String value) {
        if (value != null) {
            p.put(name, value);
        }
    }

    private static String blankToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    static String quoted(String s) {
        return s == null ? "null" : "'" + s.replaceAll("[\\r\\n]+", " ") + "'";
    }
}
