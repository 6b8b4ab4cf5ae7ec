package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Store;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

import java.security.Principal;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The Actuator endpoint {@code outbox}, the operator's view of the application's outbox: each outbox's status
 * (leader, standby, fenced, from its dispatcher's health), backlog and lag; its parked records, filtered and paged;
 * and their replay or discard. Over HTTP, once exposed ({@code management.endpoints.web.exposure.include=outbox}):
 * <ul>
 *   <li>{@code GET /actuator/outbox}: every outbox's {@link OutboxStatus}, by name;</li>
 *   <li>{@code GET /actuator/outbox/<name>}: one outbox's status;</li>
 *   <li>{@code GET /actuator/outbox/<name>/parked?topic=&key=&reason=&messageId=&parkedFrom=&parkedBefore=&after=&limit=}:
 *       a {@link ParkedPage} of its parked records;</li>
 *   <li>{@code POST /actuator/outbox/<name>/replay} and {@code POST /actuator/outbox/<name>/discard} with
 *       {@code {"ids": "42,43"}} (Actuator's request bodies hold text values): write operations, put the records back into the outbox or delete them for good
 *       ({@link ActionResult}); each is logged on {@value #AUDIT_LOGGER} naming the caller's principal.</li>
 * </ul>
 * Write operations are secured as every Actuator write operation is: by the application's Spring Security
 * configuration of the management endpoints, and {@code management.endpoint.outbox.access=read-only} turns them off.
 * A bad parameter is a 400 naming it, an unknown outbox a 404 (reads) or 400 (writes). Thread-safe.
 */
@Endpoint(id = OutboxEndpoint.ID)
public final class OutboxEndpoint {
    /** The endpoint's id. */
    public static final String ID = "outbox";
    /** The logger of the audit lines of replays and discards. */
    public static final String AUDIT_LOGGER = "dev.outbox.spring.audit";
    /** The most records one page lists, and one replay or discard takes. */
    public static final int MAX_PAGE = 500;
    /** The page size when none is asked for. */
    public static final int DEFAULT_PAGE = 50;

    private static final Logger audit = LoggerFactory.getLogger(AUDIT_LOGGER);

    private final Map<String, Outbox> outboxes = new LinkedHashMap<>();
    private final Clock clock;

    /**
     * An outbox the endpoint shows: its name in the endpoint's paths, its store, and the dispatcher harvesting it
     * in this application, if one does.
     *
     * @param name       the outbox's name, unique among the endpoint's outboxes; not blank
     * @param store      its store, whose {@link ParkedRecords} capability lists, replays and discards parked
     *                   records; not {@code null}
     * @param dispatcher the dispatcher harvesting it here, or {@code null} where this instance runs none
     *                   ({@code outbox.dispatcher.enabled=false})
     */
    public record Outbox(String name, Store store, @Nullable Dispatcher dispatcher) {
        /**
         * Checks the components.
         *
         * @param name       the outbox's name; not blank
         * @param store      its store; not {@code null}
         * @param dispatcher its dispatcher here, or {@code null}
         * @throws IllegalArgumentException if {@code name} is blank
         * @throws NullPointerException     if {@code name} or {@code store} is {@code null}
         */
        public Outbox {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(store, "store");
            if (name.isBlank()) {
                throw new IllegalArgumentException("an outbox's name must not be blank");
            }
        }
    }

    /**
     * An endpoint showing {@code outboxes}.
     *
     * @param outboxes the outboxes, at least one, with distinct names
     * @param clock    the clock the lag is measured by
     * @throws IllegalArgumentException if {@code outboxes} is empty or two have the same name
     */
    public OutboxEndpoint(List<Outbox> outboxes, Clock clock) {
        if (outboxes.isEmpty()) {
            throw new IllegalArgumentException("the outbox endpoint needs at least one outbox");
        }
        for (Outbox o : outboxes) {
            if (this.outboxes.putIfAbsent(o.name(), o) != null) {
                throw new IllegalArgumentException("two outboxes are named '" + o.name() + "'");
            }
        }
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * Every outbox's status.
     *
     * @return the outboxes by name, in the order given to the constructor
     */
    @ReadOperation
    public OutboxesReport outboxes() {
        Map<String, OutboxStatus> byName = new LinkedHashMap<>();
        outboxes.values().forEach(o -> byName.put(o.name(), OutboxStatus.of(o, clock)));
        return new OutboxesReport(byName);
    }

    /**
     * One outbox's status.
     *
     * @param name the outbox's name
     * @return its status, or {@code null} (a 404) if no outbox has that name
     */
    @ReadOperation
    public @Nullable OutboxStatus outbox(@Selector String name) {
        Outbox o = outboxes.get(name);
        return o == null ? null : OutboxStatus.of(o, clock);
    }

    /**
     * One page of an outbox's parked records, by ascending id; every filter is optional and all given must match.
     *
     * @param name         the outbox's name
     * @param section      {@code parked}, the only section there is
     * @param topic        only records of exactly this topic
     * @param key          only records of exactly this key
     * @param reason       only records whose reason contains this text
     * @param messageId    only the record with this message id (a UUID)
     * @param parkedFrom   only records parked at or after this instant (ISO-8601, e.g. {@code 2025-01-31T12:00:00Z})
     * @param parkedBefore only records parked before this instant
     * @param after        only records with an id above this one: the {@code nextAfter} of the previous page, or
     *                     absent for the first page
     * @param limit        the most records, 1 to {@value #MAX_PAGE}; {@value #DEFAULT_PAGE} when absent
     * @return the page, or {@code null} (a 404) if no outbox has that name
     * @throws InvalidEndpointRequestException (a 400) naming a parameter whose value is not valid, or if the outbox's
     *                                         store has no parked area to list
     */
    @ReadOperation
    public @Nullable ParkedPage parked(@Selector String name, @Selector String section, @Nullable String topic,
                                       @Nullable String key, @Nullable String reason, @Nullable String messageId,
                                       @Nullable String parkedFrom, @Nullable String parkedBefore,
                                       @Nullable Long after, @Nullable Integer limit) {
        if (!"parked".equals(section)) {
            throw bad("'" + section + "' is not a section of the outbox endpoint: use /" + ID + "/<outbox>/parked");
        }
        Outbox o = outboxes.get(name);
        if (o == null) {
            return null;
        }
        int pageSize = limit == null ? DEFAULT_PAGE : limit;
        if (pageSize < 1 || pageSize > MAX_PAGE) {
            throw bad("limit must be between 1 and " + MAX_PAGE + ": " + pageSize);
        }
        long afterId = after == null ? 0 : after;
        if (afterId < 0) {
            throw bad("after must not be negative: " + afterId);
        }
        ParkedQuery query = OutboxEndpointParameters.query(topic, key, reason, messageId, parkedFrom, parkedBefore,
                afterId, pageSize);
        ParkedRecords parked = parkedRecords(o);
        List<ParkedRecord> records = parked.parked(query);
        long total = parked.parkedCount(query);
        Long next = records.size() == pageSize ? records.get(records.size() - 1).id() : null;
        return new ParkedPage(records.stream().map(ParkedEntry::of).toList(), total, next);
    }

    /**
     * Replays or discards parked records of an outbox, logging an audit line naming the caller.
     *
     * @param name            the outbox's name
     * @param action          {@code replay} (put them back into the outbox, at its tail, as new records) or
     *                        {@code discard} (delete them for good)
     * @param ids             the parked records' ids, separated by commas: 1 to {@value #MAX_PAGE}; ids of no parked
     *                        record are ignored
     * @param securityContext the caller, for the audit line
     * @return how many records were replayed or discarded
     * @throws InvalidEndpointRequestException (a 400) for an unknown outbox or action, or ids that are not 1 to
     *                                         {@value #MAX_PAGE} record ids
     */
    @WriteOperation
    public ActionResult act(@Selector String name, @Selector String action, String ids,
                            SecurityContext securityContext) {
        Outbox o = outboxes.get(name);
        if (o == null) {
            throw bad("no outbox named '" + name + "'; the outboxes are " + outboxes.keySet());
        }
        if (!"replay".equals(action) && !"discard".equals(action)) {
            throw bad("'" + action + "' is not an action of the outbox endpoint: replay or discard");
        }
        List<Long> checked = OutboxEndpointParameters.ids(ids, MAX_PAGE);
        ParkedRecords parked = parkedRecords(o);
        int done = "replay".equals(action) ? parked.replay(checked) : parked.discard(checked);
        String verb = "replay".equals(action) ? "replayed" : "discarded";
        audit.info("AUDIT {} {} {} parked record(s) of outbox '{}' (ids {})", who(securityContext), verb, done,
                o.name(), checked);
        return new ActionResult(o.name(), action, checked.size(), done);
    }

    private static ParkedRecords parkedRecords(Outbox o) {
        return o.store().capability(ParkedRecords.class).orElseThrow(() -> bad("the store of outbox '" + o.name()
                + "' (" + o.store().getClass().getSimpleName() + ") has no parked area to list"));
    }

    private static String who(@Nullable SecurityContext context) {
        Principal p = context == null ? null : context.getPrincipal();
        return p == null ? "an unauthenticated caller" : "'" + p.getName().replaceAll("[\\r\\n]+", " ") + "'";
    }

    static InvalidEndpointRequestException bad(String message) {
        return new InvalidEndpointRequestException(message, message);
    }

    /**
     * Every outbox's status.
     *
     * @param outboxes the statuses by outbox name
     */
    public record OutboxesReport(Map<String, OutboxStatus> outboxes) {
    }

    /**
     * One page of parked records.
     *
     * @param records   the page's records, by ascending id
     * @param total     how many parked records match the filters in all
     * @param nextAfter the {@code after} of the next page (the last id of this one), or {@code null} when this page
     *                  was not full
     */
    public record ParkedPage(List<ParkedEntry> records, long total, @Nullable Long nextAfter) {
    }

    /**
     * A parked record as the endpoint lists it (without its payload).
     *
     * @param id        its id, the one to replay or discard it by
     * @param topic     its topic as stored
     * @param key       its key, or {@code null}
     * @param attempts  the failed deliveries before it was parked
     * @param reason    why it was parked
     * @param parkedAt  when it was parked (ISO-8601), or {@code null} where the store does not record it
     * @param messageId its message id, or {@code null} where it is not known
     */
    public record ParkedEntry(long id, String topic, @Nullable String key, int attempts, String reason,
                              @Nullable String parkedAt, @Nullable String messageId) {
        static ParkedEntry of(ParkedRecord r) {
            return new ParkedEntry(r.id(), r.topic(), r.key(), r.attempts(), r.reason(),
                    r.parkedAt() == null ? null : r.parkedAt().toString(),
                    r.messageId() == null ? null : r.messageId().toString());
        }
    }

    /**
     * What a replay or discard did.
     *
     * @param outbox    the outbox's name
     * @param action    {@code replay} or {@code discard}
     * @param requested how many ids were given
     * @param affected  how many parked records were replayed or discarded (ids of no parked record count none)
     */
    public record ActionResult(String outbox, String action, int requested, int affected) {
    }
}
