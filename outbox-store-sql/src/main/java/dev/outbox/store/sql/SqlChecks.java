package dev.outbox.store.sql;

import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import org.slf4j.Logger;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * The argument checks of a SQL store's calls, and the result of a mark or read; the same for every database. For
 * store implementations. Stateless.
 */
public final class SqlChecks {
    private SqlChecks() {
    }

    /**
     * Checks a mark's, a read's or a listing's {@code limit}.
     *
     * @param limit the most rows the call returns
     * @return {@code limit} itself
     * @throws IllegalArgumentException if it is less than 1
     */
    public static int limit(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        return limit;
    }

    /**
     * Checks a read's cursor.
     *
     * @param after the id the read starts above
     * @return {@code after} itself
     * @throws IllegalArgumentException if it is negative
     */
    public static long after(long after) {
        if (after < 0) {
            throw new IllegalArgumentException("after must not be negative: " + after);
        }
        return after;
    }

    /**
     * The ids, checked, without duplicates, ascending (so that rows are always locked in the same order).
     *
     * @param what the argument's name, for the exceptions' messages
     * @param ids  the ids, in any order, duplicates allowed; not null
     * @return a new, modifiable list of the distinct ids, ascending
     * @throws NullPointerException     if {@code ids} is null
     * @throws IllegalArgumentException naming the position of a null id
     */
    public static List<Long> ids(String what, Collection<Long> ids) {
        Objects.requireNonNull(ids, what + " must not be null");
        TreeSet<Long> sorted = new TreeSet<>();
        int i = 0;
        for (Long id : ids) {
            if (id == null) {
                throw new IllegalArgumentException(what + " contains null at position " + i);
            }
            sorted.add(id);
            i++;
        }
        return new ArrayList<>(sorted);
    }

    /**
     * The reasons to park rows with, by ascending id: a null reason becomes {@code "(no reason given)"}, and each
     * reason passes through {@code clean}, which makes it storable in the database's text column.
     *
     * @param reasons the reason by id; not null; a reason may be null
     * @param clean   makes a reason storable (truncates it, strips what the column cannot hold); not null
     * @return a new map of the cleaned reasons, ascending by id
     * @throws NullPointerException     if {@code reasons} is null
     * @throws IllegalArgumentException if an id is null
     */
    public static TreeMap<Long, String> reasons(Map<Long, String> reasons, UnaryOperator<String> clean) {
        Objects.requireNonNull(reasons, "reasons must not be null");
        TreeMap<Long, String> sorted = new TreeMap<>();
        for (Map.Entry<Long, String> entry : reasons.entrySet()) {
            if (entry.getKey() == null) {
                throw new IllegalArgumentException("reasons contains a null id");
            }
            sorted.put(entry.getKey(), clean.apply(entry.getValue() == null ? "(no reason given)" : entry.getValue()));
        }
        return sorted;
    }

    /**
     * The next attempt times to record by id, ascending (so that rows are always locked in the same order).
     *
     * @param nextAttempts the next attempt's time by id; not null
     * @return a new map of the same entries, ascending by id
     * @throws NullPointerException     if {@code nextAttempts} is null
     * @throws IllegalArgumentException naming a null id or the id of a null time
     */
    public static TreeMap<Long, Instant> nextAttempts(Map<Long, Instant> nextAttempts) {
        Objects.requireNonNull(nextAttempts, "nextAttempts must not be null");
        TreeMap<Long, Instant> sorted = new TreeMap<>();
        for (Map.Entry<Long, Instant> entry : nextAttempts.entrySet()) {
            if (entry.getKey() == null) {
                throw new IllegalArgumentException("nextAttempts contains a null id");
            }
            if (entry.getValue() == null) {
                throw new IllegalArgumentException("nextAttempts has no time for id " + entry.getKey());
            }
            sorted.put(entry.getKey(), entry.getValue());
        }
        return sorted;
    }

    /**
     * The {@link MarkResult} of the rows one mark or read returned, each sorted by id; logs a warning naming the
     * first row of {@code table} that is not a valid message.
     *
     * @param log   where the warning goes
     * @param table the table's name, for the warning
     * @param rows  the rows as read, in any order
     * @return the valid messages and the rejected rows (see {@link MarkedRow#result})
     */

    public static MarkResult marked(Logger log, String table, Collection<? extends MarkedRow> rows) {
        MarkResult result = MarkedRow.result(rows);
        if (!result.rejected().isEmpty()) {
            MarkResult.Rejected first = result.rejected().get(0);
            log.warn("Marked {} row(s) of {} that are not valid messages, first: id {}: {}",
                    result.rejected().size(), table, first.id(), first.reason());
        }
        return result;
    }
}
