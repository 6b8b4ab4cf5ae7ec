package dev.outbox;

import java.time.Instant;
import java.util.UUID;

/**
 * Which parked rows to list: optional filters (all must match) and a page. Immutable and thread-safe.
 *
 * @param topic          only rows with exactly this topic, or null for any
 * @param key            only rows with exactly this key, or null for any
 * @param reasonContains only rows whose reason contains this text (compared by the database's collation), or null
 * @param messageId      only the row with this message id, or null for any
 * @param parkedFrom     only rows parked at or after this instant, or null
 * @param parkedBefore   only rows parked before this instant, or null
 * @param afterId        only rows with a greater id (0 for the first page)
 * @param limit          the most rows to return, at least 1
 */
public record ParkedQuery(String topic, String key, String reasonContains, UUID messageId, Instant parkedFrom,
                          Instant parkedBefore, long afterId, int limit) {

    /**
     * Checks the components; an empty {@code topic}, {@code key} or {@code reasonContains} becomes null (no filter).
     *
     * @param topic          only rows with exactly this topic, or null for any
     * @param key            only rows with exactly this key, or null for any
     * @param reasonContains only rows whose reason contains this text, or null
     * @param messageId      only the row with this message id, or null for any
     * @param parkedFrom     only rows parked at or after this instant, or null
     * @param parkedBefore   only rows parked before this instant, or null
     * @param afterId        only rows with a greater id, 0 or more
     * @param limit          the most rows to return, at least 1
     * @throws IllegalArgumentException if {@code limit} is less than 1, {@code afterId} is negative, or
     *                                  {@code parkedFrom} is not before {@code parkedBefore}
     */
    public ParkedQuery {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        if (afterId < 0) {
            throw new IllegalArgumentException("afterId must not be negative: " + afterId);
        }
        if (parkedFrom != null && parkedBefore != null && !parkedFrom.isBefore(parkedBefore)) {
            throw new IllegalArgumentException("parkedFrom must be before parkedBefore: " + parkedFrom + " is not before "
                    + parkedBefore);
        }
        topic = blankToNull(topic);
        key = blankToNull(key);
        reasonContains = blankToNull(reasonContains);
    }

    /**
     * Filters by topic, key and reason only.
     *
     * @param topic          only rows with exactly this topic, or null for any
     * @param key            only rows with exactly this key, or null for any
     * @param reasonContains only rows whose reason contains this text, or null
     * @param afterId        only rows with a greater id, 0 or more (0 for the first page)
     * @param limit          the most rows to return, at least 1
     * @throws IllegalArgumentException if {@code limit} is less than 1 or {@code afterId} is negative
     */
    public ParkedQuery(String topic, String key, String reasonContains, long afterId, int limit) {
        this(topic, key, reasonContains, null, null, null, afterId, limit);
    }

    /**
     * The first {@code limit} parked rows, unfiltered.
     *
     * @param limit the most rows to return, at least 1
     * @return the query
     * @throws IllegalArgumentException if {@code limit} is less than 1
     */
    public static ParkedQuery first(int limit) {
        return new ParkedQuery(null, null, null, 0, limit);
    }

    /**
     * This query for the page after the row with {@code id}.
     *
     * @param id the last id of the current page, 0 or more
     * @return a new query with the same filters and limit, and {@code afterId} set to {@code id}
     * @throws IllegalArgumentException if {@code id} is negative
     */

    public ParkedQuery after(long id) {
        return new ParkedQuery(topic, key, reasonContains, messageId, parkedFrom, parkedBefore, id, limit);
    }

    private static String blankToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
