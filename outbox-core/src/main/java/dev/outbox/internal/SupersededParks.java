package dev.outbox.internal;

import dev.outbox.DispatcherConfig.SupersededParked;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.ParkedRecords;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Parked latest-only records whose key goes on delivering ({@link SupersededParked}): once a newer record of a parked
 * one's topic and key is acknowledged, the parked value is worthless and a replay would send it after the newer one,
 * so the leader discards the parked row ({@link SupersededParked#DISCARD}) or says at WARN that it is superseded
 * ({@link SupersededParked#KEEP}).
 *
 * <p>A parked row is known to be latest only by its park reason, which starts with {@link #REASON_MARK} (the engine
 * writes it when it parks such a record): a new leader finds them with one query of the parked area at the start of
 * its term, and the parked area needs no column for it. At most {@link #MAX_TRACKED} are followed; beyond that a
 * WARN line says so and the rest stay parked as they are.
 *
 * <p>Owned by the settle thread. Costs nothing on the acknowledgement path while no latest-only record is parked.
 */
final class SupersededParks {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    /** How the park reason of a latest-only record begins. */
    static final String REASON_MARK = "latest only; ";
    /** The most parked latest-only records followed at once. */
    static final int MAX_TRACKED = 10_000;
    private static final int PAGE = 500;
    private static final long RELOAD_BACKOFF_NANOS = 30_000_000_000L;

    private final String name;
    private final EngineRuntime runtime;
    /** The store's parked area, or null if it has none (then nothing is followed). */
    private final ParkedRecords parkedArea;
    private final SupersededParked policy;
    private final Callbacks callbacks;
    /** The parked latest-only records by topic and key, in id order. */
    private final Map<String, List<ParkedRecord>> byKey = new HashMap<>();
    private int tracked;
    private boolean warnedFull;
    private int loadedTerm;
    /** After a failed read of the parked area: when to try again; else null. */
    private Long nextLoadNanos;

    SupersededParks(String name, EngineRuntime runtime, ParkedRecords parkedArea, SupersededParked policy,
                    Callbacks callbacks) {
        this.name = name;
        this.runtime = runtime;
        this.parkedArea = parkedArea;
        this.policy = policy;
        this.callbacks = callbacks;
    }

    /** The reason to park {@code record} with: marked if it is latest only. */
    static String reason(OutboxRecord record, String reason) {
        return record.key() != null && record.message().isLatestOnly()
                ? Excerpt.of(REASON_MARK + reason, Excerpt.MAX_REASON_LENGTH) : reason;
    }

    /**
     * At the start of each batch: in a new term, forgets what it followed and reads the parked area's latest-only
     * rows again (another leader may have parked, replayed or discarded some meanwhile).
     */
    void term(int term) {
        if (parkedArea == null || term == loadedTerm
                || nextLoadNanos != null && runtime.nanoTime() - nextLoadNanos < 0) {
            return;
        }
        nextLoadNanos = null;
        byKey.clear();
        tracked = 0;
        try {
            long after = 0;
            while (tracked < MAX_TRACKED) {
                List<ParkedRecord> page = parkedArea.parked(new ParkedQuery(null, null, REASON_MARK, after, PAGE));
                for (ParkedRecord p : page) {
                    if (p.reason() != null && p.reason().startsWith(REASON_MARK)) {
                        follow(p);
                    }
                    after = p.id();
                }
                if (page.size() < PAGE) {
                    break;
                }
            }
            loadedTerm = term;
            if (tracked > 0) {
                log.info("{}: {} parked latest-only record(s) followed: each is {} once a newer record of its key is"
                        + " delivered", name, tracked, policy == SupersededParked.DISCARD ? "discarded" : "reported");
            }
        } catch (RuntimeException e) {
            nextLoadNanos = runtime.nanoTime() + RELOAD_BACKOFF_NANOS;
            log.warn("{}: could not list the parked latest-only records (trying again in 30 s); until then only those"
                    + " parked in this term are discarded once superseded: {}", name, EngineEvents.describe(e));
        }
    }

    /** A record was parked (its park committed). */
    void parked(ParkedRecord p) {
        if (parkedArea != null && p.key() != null && p.reason() != null && p.reason().startsWith(REASON_MARK)) {
            follow(p);
        }
    }

    /** Whether any parked latest-only record is followed: else {@link #delivered} need not be called. */
    boolean following() {
        return tracked > 0;
    }

    /** A record was delivered (its purge committed): the parked latest-only records of its key below it are done. */
    void delivered(OutboxRecord r) {
        if (r.key() == null) {
            return;
        }
        String k = key(r.topic(), r.key());
        List<ParkedRecord> parked = byKey.get(k);
        if (parked == null) {
            return;
        }
        for (Iterator<ParkedRecord> it = parked.iterator(); it.hasNext(); ) {
            ParkedRecord p = it.next();
            if (p.id() >= r.id()) {
                continue;
            }
            if (supersede(p, r.id())) {
                it.remove();
                tracked--;
            }
        }
        if (parked.isEmpty()) {
            byKey.remove(k);
        }
    }

    /** @return whether {@code p} is done with (discarded, gone, or reported) */
    private boolean supersede(ParkedRecord p, long newerId) {
        if (policy == SupersededParked.KEEP) {
            log.warn("{}: parked record {} (topic {}, key {}) is superseded by delivered record {}: replaying it would"
                    + " send the older value after the newer one (supersededParked KEEP)", name, p.id(), p.topic(),
                    Excerpt.of(p.key()), newerId);
            return true;
        }
        int discarded;
        try {
            discarded = parkedArea.discard(List.of(p.id()));
        } catch (RuntimeException e) {
            log.warn("{}: could not discard superseded parked record {} (topic {}, key {}); trying again when its key"
                    + " delivers again: {}", name, p.id(), p.topic(), Excerpt.of(p.key()), EngineEvents.describe(e));
            return false;
        }
        if (discarded > 0) { // 0: replayed or discarded by an operator meanwhile
            log.info("{}: discarded parked record {} (topic {}, key {}): latest only, superseded by delivered record"
                    + " {}", name, p.id(), p.topic(), Excerpt.of(p.key()), newerId);
            callbacks.parkedSuperseded(p, newerId);
        }
        return true;
    }

    private void follow(ParkedRecord p) {
        if (tracked >= MAX_TRACKED) {
            if (warnedFull) {
                return;
            }
            warnedFull = true;
            log.warn("{}: more than {} parked latest-only records; parked record {} (topic {}, key {}) and later ones are not"
                    + " discarded when superseded", name, MAX_TRACKED, p.id(), p.topic(), Excerpt.of(p.key()));
            return;
        }
        List<ParkedRecord> parked = byKey.computeIfAbsent(key(p.topic(), p.key()), k -> new ArrayList<>(1));
        for (ParkedRecord q : parked) {
            if (q.id() == p.id()) {
                return;
            }
        }
        parked.add(p);
        tracked++;
    }

    private static String key(String topic, String key) {
        return topic + '\u0000' + key;
    }
}
