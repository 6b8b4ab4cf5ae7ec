package dev.outbox.broker.kafka;

import dev.outbox.OutboxRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Exactly-once publishing's memory, for one transactional id: the records its producer published whose rows the store
 * may still hold ({@link #committed}, until the dispatcher reports their purge), and the records an earlier producer
 * of the id listed in its last progress record ({@link #recovered}, until the harvest meets them again). What a
 * progress record lists is both, and the batch it commits with ({@link #withBatch}). A record is matched by its
 * message id, never by its row id alone: a WAL harvest numbers rows per leader.
 *
 * <p>Entries are forgotten after {@link #MEMORY} at the latest: a row whose purge the dispatcher never reports (a
 * store outage longer than that, or a broker wrapped without forwarding its {@code capability}) is then published
 * again by a later leader — a duplicate, never a loss. Thread-safe: {@link #purged} from the dispatcher's settle
 * thread, everything else from the transaction thread.
 */
final class PublishedRecords {
    private static final Logger log = LoggerFactory.getLogger(PublishedRecords.class);
    /** How long an entry is kept at most. */
    static final Duration MEMORY = Duration.ofMinutes(10);
    /** Above this many remembered records, one WARN: purges are probably not reported. */
    static final int WARN_SIZE = 200_000;

    private record Entry(UUID messageId, long rowId, long atNanos) {
    }

    /** Published and acknowledged by this producer, row not yet purged: by row id. */
    private final Map<Long, Entry> committed = new ConcurrentHashMap<>();
    /** The same entries by message id: a record met again (a leader that stood down and leads again) is skipped. */
    private final Map<UUID, Entry> committedByMessage = new ConcurrentHashMap<>();
    /** Listed by the progress record read at the last {@code initTransactions()}, not met since: by message id. */
    private final Map<UUID, Entry> recovered = new HashMap<>();
    private long lastExpiry = System.nanoTime();
    private boolean warned;

    /**
     * A new producer's progress: what the last committed progress record lists is added to what this memory holds.
     * Nothing is forgotten here: everything remembered is in Kafka (this process heard its transaction commit, or an
     * earlier list named it), and the list just read may be older than this process's own last commit — a
     * {@code read_committed} read of the shared progress partition stops at the first transaction still open there,
     * another shard's as well — and replacing the memory with it would send such records again: the likely cause of
     * the duplicates of a sharded end-to-end run (seed 59721216257168), where producers of the same ids were created
     * anew in the same process after timed-out progress reads. A successor in another process still depends on the
     * list it reads being current.
     */
    void recovered(Map<UUID, Long> listed) {
        long now = System.nanoTime();
        listed.forEach((messageId, rowId) -> {
            if (!committedByMessage.containsKey(messageId)) {
                recovered.put(messageId, new Entry(messageId, rowId, now));
            }
        });
        if (!listed.isEmpty()) {
            log.info("{} record(s) were published by an earlier producer and may still be in the outbox: they are"
                    + " acknowledged without being sent again", listed.size());
        }
    }

    /**
     * The records of {@code batch} to send: those neither an earlier producer nor this one published; each of the
     * others is handed to {@code skip} (the caller acknowledges it) and remembered as published by this producer.
     * This producer's own: a leader whose purge was refused (its storage epoch lost) forgets the records it had in
     * flight, and when it leads again with the same producer — no new producer, so no progress read — it meets
     * them again in the table although Kafka has them (found by the simulation, {@code SimulationExactlyOnceTest}).
     */
    <E> List<E> skipPublished(List<E> batch, Function<E, OutboxRecord> record, Consumer<E> skip) {
        expire();
        if (recovered.isEmpty() && committedByMessage.isEmpty()) {
            return batch;
        }
        List<E> send = new ArrayList<>(batch.size());
        long now = System.nanoTime();
        for (E e : batch) {
            OutboxRecord r = record.apply(e);
            if (r.messageId() != null && (recovered.remove(r.messageId()) != null
                    || committedByMessage.containsKey(r.messageId()))) {
                remember(r, now);
                skip.accept(e);
            } else {
                send.add(e);
            }
        }
        return send;
    }

    private void remember(OutboxRecord r, long now) {
        Entry entry = new Entry(r.messageId(), r.id(), now);
        Entry before = committedByMessage.put(r.messageId(), entry);
        if (before != null && before.rowId() != r.id()) {
            committed.remove(before.rowId(), before); // a WAL harvest numbered the row again
        }
        committed.put(r.id(), entry);
    }

    /** What the progress record of a transaction carrying {@code batch} lists: row id by message id. */
    <E> Map<UUID, Long> withBatch(List<E> batch, Function<E, OutboxRecord> record) {
        Map<UUID, Long> all = new HashMap<>((committed.size() + recovered.size() + batch.size()) * 2);
        committed.values().forEach(e -> all.put(e.messageId(), e.rowId()));
        recovered.values().forEach(e -> all.put(e.messageId(), e.rowId()));
        for (E e : batch) {
            OutboxRecord r = record.apply(e);
            if (r.messageId() != null) {
                all.put(r.messageId(), r.id());
            }
        }
        return all;
    }

    /** The transaction carrying {@code batch} committed. */
    <E> void committed(List<E> batch, Function<E, OutboxRecord> record) {
        long now = System.nanoTime();
        for (E e : batch) {
            OutboxRecord r = record.apply(e);
            if (r.messageId() != null) {
                remember(r, now);
            }
        }
        if (!warned && committed.size() > WARN_SIZE) {
            warned = true;
            log.warn("exactly-once publishing remembers {} published records whose purge it has not heard of: does"
                    + " the dispatcher's broker forward capability(PurgeListener)?", committed.size());
        }
    }

    /** The store deleted these rows. */
    void purged(Collection<Long> ids) {
        for (Long id : ids) {
            Entry e = committed.remove(id);
            if (e != null) {
                committedByMessage.remove(e.messageId(), e);
            }
        }
    }

    /** How many records are remembered: published and unpurged, or listed and not met yet. */
    int size() {
        return committed.size() + recovered.size();
    }

    private void expire() {
        long now = System.nanoTime();
        if (now - lastExpiry < Duration.ofSeconds(1).toNanos()) {
            return;
        }
        lastExpiry = now;
        long oldest = now - MEMORY.toNanos();
        committed.values().removeIf(e -> e.atNanos() - oldest < 0);
        committedByMessage.values().removeIf(e -> e.atNanos() - oldest < 0);
        recovered.values().removeIf(e -> e.atNanos() - oldest < 0);
    }
}
