package dev.outbox.sidecar;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
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
import java.util.stream.Collectors;

/**
 * What the operator API and the console do with parked records, in one place: list, show, replay and discard, the
 * changes written to the audit log ({@value #AUDIT_LOGGER}) naming who did what. Thread-safe.
 */
public final class ParkedOperations {
    /** The logger of the audit lines. */
    public static final String AUDIT_LOGGER = "dev.outbox.sidecar.audit";
    /** The most records one page lists, and one replay or discard takes. */
    public static final int MAX_PAGE = 500;

    private static final Logger audit = LoggerFactory.getLogger(AUDIT_LOGGER);

    private final Outboxes outboxes;

    ParkedOperations(Outboxes outboxes) {
        this.outboxes = Objects.requireNonNull(outboxes, "outboxes");
    }

    /** One page of parked records, the number matching the filters, and the id to continue after (or null). */
    public record Page(List<ParkedRecord> records, long total, Long nextAfter) {
    }

    /** The outbox named {@code name}, or a 404. */
    public SidecarOutbox outbox(String name) {
        return outboxes.get(name).orElseThrow(() -> new ResponseStatusException(HttpStatus.NOT_FOUND,
                "no outbox named '" + name + "'"));
    }

    public Page list(String outbox, String topic, String key, String reason, long after, int limit) {
        ParkedQuery query;
        try {
            query = new ParkedQuery(topic, key, reason, after, Math.min(limit, MAX_PAGE));
        } catch (IllegalArgumentException e) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, e.getMessage(), e);
        }
        SidecarOutbox o = outbox(outbox);
        List<ParkedRecord> records = o.parked().parked(query);
        long total = o.parked().parkedCount(query);
        Long next = records.size() == query.limit() ? records.get(records.size() - 1).id() : null;
        return new Page(records, total, next);
    }

    public Optional<ParkedMessage> show(String outbox, long id) {
        return outbox(outbox).parked().parkedMessage(id);
    }

    /** The parked records with the given ids (those that exist), for a confirmation page. */
    public List<ParkedMessage> selected(String outbox, Collection<Long> ids) {
        SidecarOutbox o = outbox(outbox);
        List<ParkedMessage> result = new ArrayList<>();
        for (Long id : checked(ids)) {
            o.parked().parkedMessage(id).ifPresent(result::add);
        }
        return result;
    }

    /** Puts the records back into the outbox; logs an audit line naming {@code who}. */
    public int replay(String outbox, Collection<Long> ids, String who) {
        List<ParkedMessage> records = selected(outbox, ids);
        int replayed = outbox(outbox).store().replay(checked(ids));
        audit.info("AUDIT {} replayed {} parked record(s) of outbox '{}': {}", quoted(who), replayed, outbox,
                describe(records));
        return replayed;
    }

    /** Deletes the records for good; logs an audit line naming {@code who} and every record discarded. */
    public int discard(String outbox, Collection<Long> ids, String who) {
        List<ParkedMessage> records = selected(outbox, ids);
        int discarded = outbox(outbox).parked().discard(checked(ids));
        audit.info("AUDIT {} discarded {} parked record(s) of outbox '{}': {}", quoted(who), discarded, outbox,
                describe(records));
        return discarded;
    }

    private static List<Long> checked(Collection<Long> ids) {
        if (ids == null || ids.isEmpty()) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "select at least one record (ids)");
        }
        if (ids.size() > MAX_PAGE) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "at most " + MAX_PAGE + " records at once");
        }
        if (ids.contains(null)) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "ids must not contain null");
        }
        return List.copyOf(ids);
    }

    private static String describe(List<ParkedMessage> records) {
        return records.stream().map(m -> "id " + m.record().id() + " (topic " + quoted(m.record().topic()) + ", key "
                + quoted(m.record().key()) + ", reason " + quoted(m.record().reason()) + ")")
                .collect(Collectors.joining(", ", "[", "]"));
    }

    private static String quoted(String s) {
        return s == null ? "null" : "'" + s.replaceAll("[\\r\\n]+", " ") + "'";
    }
}
