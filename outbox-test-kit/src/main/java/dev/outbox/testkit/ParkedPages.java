package dev.outbox.testkit;

import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A {@link ParkedQuery} applied to parked rows held in memory, as the SQL stores apply it in their statements: the
 * in-memory stores' {@code ParkedRecords}.
 */
final class ParkedPages {
    private ParkedPages() {
    }

    /** Whether {@code r} passes the query's filters (its paging ignored). */
    static boolean matches(ParkedQuery q, ParkedRecord r) {
        return (q.topic() == null || q.topic().equals(r.topic()))
                && (q.key() == null || q.key().equals(r.key()))
                && (q.reasonContains() == null || r.reason() != null && r.reason().contains(q.reasonContains()))
                && (q.messageId() == null || q.messageId().equals(r.messageId()))
                && (q.parkedFrom() == null || r.parkedAt() != null && !r.parkedAt().isBefore(q.parkedFrom()))
                && (q.parkedBefore() == null || r.parkedAt() != null && r.parkedAt().isBefore(q.parkedBefore()));
    }

    /** The page the query asks for, from rows in ascending id order. */
    static List<ParkedRecord> page(ParkedQuery q, Collection<ParkedRecord> rows) {
        List<ParkedRecord> out = new ArrayList<>();
        for (ParkedRecord r : rows) {
            if (out.size() == q.limit()) {
                break;
            }
            if (r.id() > q.afterId() && matches(q, r)) {
                out.add(r);
            }
        }
        return out;
    }

    /** How many of the rows pass the query's filters. */
    static long count(ParkedQuery q, Collection<ParkedRecord> rows) {
        return rows.stream().filter(r -> matches(q, r)).count();
    }
}
