package dev.outbox.sidecar;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.web.server.ResponseStatusException;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

/**
 * What the operator API and the console do with parked records, in one place: list, show, replay and discard
 * (selected records, or all those matching a filter), the changes written to the audit log ({@value #AUDIT_LOGGER})
 * naming who did what. Thread-safe.
 */
public final class ParkedOperations {
    /** The logger of the audit lines. */
    public static final String AUDIT_LOGGER = "dev.outbox.sidecar.audit";
    /** The most records one page lists, and one replay or discard of selected records takes. */
    public static final int MAX_PAGE = 500;
    /** The most records one replay or discard of all those matching a filter takes. */
    public static final int MAX_MATCHING = 10_000;

    private static final Logger audit = LoggerFactory.getLogger(AUDIT_LOGGER);

    private final Outboxes outboxes;

    ParkedOperations(Outboxes outboxes) {
        this.outboxes = Objects.requireNonNull(outboxes, "outboxes");
    }

    /**
     * One page of parked records, the number matching the filters, and the id to continue after (or null).
     *
     * @param records   the page's records in id order, at most the limit asked
     * @param total     how many parked records match the filter in all
     * @param nextAfter the {@code after} of the next page (the last id here), or {@code null} when this page was
     *                  not full
     */
    public record Page(List<ParkedRecord> records, long total, Long nextAfter) {
    }

    /**
     * A replay or discard of all records matching a filter was confirmed for a number that no longer matches: the
     * operator looks again. A 409.
     */
    static final class CountChanged extends ResponseStatusException {
        private final long matching;

        CountChanged(long expected, long matching) {
            super(HttpStatus.CONFLICT, matching + " record(s) match the filter now, not the " + expected
                    + " expected: list them again and confirm the new number");
            this.matching = matching;
        }

        /** How many match now (at most {@link #MAX_MATCHING} + 1). */
        long matching() {
            return matching;
        }
    }

    /**
     * The outbox named {@code name}, or a 404.
     *
     * @param name the outbox's name, as in {@code sidecar.outboxes.<name>}
     * @return the outbox
     * @throws ResponseStatusException 404 if no outbox has that name
     */
    public SidecarOutbox outbox(String name) {
        return outboxes.get(name).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no outbox named '" + name + "'"));
    }

    /**
     * The page of records matching {@code filter} after the id {@code after}, at most {@code limit}.
     *
     * @param outbox the outbox's name
     * @param filter which parked records to list (topic, key, reason, parked time)
     * @param after  list records with ids above this; 0 for the first page
     * @param limit  the most records, 1 to {@value #MAX_PAGE}
     * @return the page, with the total count and where the next page starts
     * @throws ResponseStatusException 400 if {@code limit} is not between 1 and {@value #MAX_PAGE} or {@code after}
     *                                 is negative; 404 for an unknown outbox
     */
    public Page list(String outbox, ParkedFilter filter, long after, int limit) {
        if (limit < 1 || limit > MAX_PAGE) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "limit must be between 1 and " + MAX_PAGE
                    + ": " + limit);
        }
        if (after < 0) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "after must not be negative: " + after);
        }
        SidecarOutbox o = outbox(outbox);
        List<ParkedRecord> records = o.parked().parked(filter.query(after, limit));
        long total = o.parked().parkedCount(filter.query(0, 1));
        Long next = records.size() == limit ? records.get(records.size() - 1).id() : null;
        return new Page(records, total, next);
    }

    /**
     * How many parked records match {@code filter}.
     *
     * @param outbox the outbox's name
     * @param filter which parked records to count
     * @return the number matching now
     * @throws ResponseStatusException 404 for an unknown outbox
     */
    public long count(String outbox, ParkedFilter filter) {
        return outbox(outbox).parked().parkedCount(filter.query(0, 1));
    }

    /**
     * One parked record with its message (value and headers).
     *
     * @param outbox the outbox's name
     * @param id     the parked record's id (its id in the outbox)
     * @return the record, or empty if no parked record has that id
     * @throws ResponseStatusException 404 for an unknown outbox
     */
    public Optional<ParkedMessage> show(String outbox, long id) {
        return outbox(outbox).parked().parkedMessage(id);
    }

    /**
     * The parked records with the given ids (those that exist), for a confirmation page.
     *
     * @param outbox the outbox's name
     * @param ids    1 to {@value #MAX_PAGE} ids, none {@code null}
     * @return the records found, in the order of {@code ids}; ids of no parked record are left out
     * @throws ResponseStatusException 400 if {@code ids} is empty, too large or holds {@code null}; 404 for an
     *                                 unknown outbox
     */
    public List<ParkedMessage> selected(String outbox, Collection<Long> ids) {
        SidecarOutbox o = outbox(outbox);
        List<ParkedMessage> result = new ArrayList<>();
        for (Long id : checked(ids)) {
            o.parked().parkedMessage(id).ifPresent(result::add);
        }
        return result;
    }

    /**
     * Puts the records back into the outbox; logs an audit line naming {@code who}.
     *
     * @param outbox the outbox's name
     * @param ids    1 to {@value #MAX_PAGE} ids, none {@code null}
     * @param who    the operator, as authenticated, for the audit line
     * @return how many records were replayed (ids of no parked record count none)
     * @throws ResponseStatusException 400 if {@code ids} is empty, too large or holds {@code null}; 404 for an
     *                                 unknown outbox
     */
    public int replay(String outbox, Collection<Long> ids, String who) {
        List<ParkedRecord> records = selected(outbox, ids).stream().map(ParkedMessage::record).toList();
        int replayed = outbox(outbox).store().replay(checked(ids));
        audit.info("AUDIT {} replayed {} parked record(s) of outbox '{}': {}", quoted(who), replayed, outbox,
                describe(records));
        return replayed;
    }

    /**
     * Deletes the records for good; logs an audit line naming {@code who} and every record discarded.
     *
     * @param outbox the outbox's name
     * @param ids    1 to {@value #MAX_PAGE} ids, none {@code null}
     * @param who    the operator, as authenticated, for the audit line
     * @return how many records were discarded (ids of no parked record count none)
     * @throws ResponseStatusException 400 if {@code ids} is empty, too large or holds {@code null}; 404 for an
     *                                 unknown outbox
     */
    public int discard(String outbox, Collection<Long> ids, String who) {
        List<ParkedRecord> records = selected(outbox, ids).stream().map(ParkedMessage::record).toList();
        int discarded = outbox(outbox).parked().discard(checked(ids));
        audit.info("AUDIT {} discarded {} parked record(s) of outbox '{}': {}", quoted(who), discarded, outbox,
                describe(records));
        return discarded;
    }

    /**
     * Replays every record matching {@code filter}, in id order, {@value #MAX_PAGE} at a time; {@code expected} is
     * the number the operator confirmed. Logs an audit line per {@value #MAX_PAGE} records.
     *
     * @param outbox   the outbox's name
     * @param filter   which parked records to replay
     * @param expected the number of matching records the operator confirmed, at least 1
     * @param who      the operator, as authenticated, for the audit lines
     * @return how many records were replayed
     * @throws CountChanged            if another number matches
     * @throws ResponseStatusException 400 if more than {@value #MAX_MATCHING} match or {@code expected} is less
     *                                 than 1; 404 for an unknown outbox
     */
    public int replayMatching(String outbox, ParkedFilter filter, long expected, String who) {
        SidecarOutbox o = outbox(outbox);
        return matching(o, filter, expected, who, "replayed", ids -> o.store().replay(ids));
    }

    /**
     * Discards every record matching {@code filter}; as {@link #replayMatching}.
     *
     * @param outbox   the outbox's name
     * @param filter   which parked records to discard
     * @param expected the number of matching records the operator confirmed, at least 1
     * @param who      the operator, as authenticated, for the audit lines
     * @return how many records were discarded
     * @throws ResponseStatusException 400 or 404 as {@link #replayMatching}, or 409 if another number matches
     */
    public int discardMatching(String outbox, ParkedFilter filter, long expected, String who) {
        SidecarOutbox o = outbox(outbox);
        return matching(o, filter, expected, who, "discarded", ids -> o.parked().discard(ids));
    }

    private int matching(SidecarOutbox o, ParkedFilter filter, long expected, String who, String verb,
                         ToIntFunction<List<Long>> action) {
        if (expected < 1) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "expected must be the number of records the"
                    + " filter matches (at least 1): " + expected);
        }
        List<ParkedRecord> all = new ArrayList<>();
        long after = 0;
        while (all.size() <= MAX_MATCHING) {
            List<ParkedRecord> page = o.parked().parked(filter.query(after, MAX_PAGE));
            all.addAll(page);
            if (page.size() < MAX_PAGE) {
                break;
            }
            after = page.get(page.size() - 1).id();
        }
        if (all.size() > MAX_MATCHING) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "at most " + MAX_MATCHING + " records at once:"
                    + " the filter (" + filter.describe() + ") matches " + o.parked().parkedCount(filter.query(0, 1))
                    + "; narrow it, e.g. with parkedBefore");
        }
        if (all.size() != expected) {
            throw new CountChanged(expected, all.size());
        }
        int done = 0;
        int parts = (all.size() + MAX_PAGE - 1) / MAX_PAGE;
        for (int part = 0; part < parts; part++) {
            List<ParkedRecord> chunk = all.subList(part * MAX_PAGE, Math.min(all.size(), (part + 1) * MAX_PAGE));
            int n = action.applyAsInt(chunk.stream().map(ParkedRecord::id).toList());
            done += n;
            audit.info("AUDIT {} {} {} parked record(s) of outbox '{}' matching {} (part {} of {}): {}", quoted(who),
                    verb, n, o.name(), filter.describe(), part + 1, parts, describe(chunk));
        }
        return done;
    }

    private static List<Long> checked(Collection<Long> ids) {
        if (ids == null || ids.isEmpty()) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "select at least one record: ids, or a"
                    + " filter with the number expected");
        }
        if (ids.size() > MAX_PAGE) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "ids must hold at most " + MAX_PAGE
                    + " records: " + ids.size() + " given; to act on more, use a filter");
        }
        if (ids.contains(null)) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "ids must not contain null");
        }
        return List.copyOf(ids);
    }

    private static String describe(List<ParkedRecord> records) {
        return records.stream().map(r -> "id " + r.id() + " (topic " + quoted(r.topic()) + ", key "
                + quoted(r.key()) + ", reason " + quoted(r.reason()) + ")")
                .collect(Collectors.joining(", ", "[", "]"));
    }

    private static String quoted(String s) {
        return ParkedFilter.quoted(s);
    }
}
