package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.InMemoryFences.Scope;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The parked area of an {@link InMemoryStore}: parking rows out of the outbox, listing, filtering, counting, reading
 * and discarding parked rows, their distinct keys, and replaying them into the outbox as new rows (with the rows of
 * their keys behind them moved after them).
 *
 * <p>Thread-safe: each call is atomic under the store's lock (injected delays are spent outside it).
 */
final class InMemoryParkedArea {
    private final Object lock;
    private final Clock clock;
    private final InMemoryRows table;
    private final InMemoryFences fences;
    private final InMemoryFaultGate gate;
    /** Parked rows by their id in the outbox. Guarded by {@link #lock}. */
    private final NavigableMap<Long, StoredRow> parked = new TreeMap<>();

    InMemoryParkedArea(Object lock, Clock clock, InMemoryRows table, InMemoryFences fences, InMemoryFaultGate gate) {
        this.lock = lock;
        this.clock = clock;
        this.table = table;
        this.fences = fences;
        this.gate = gate;
    }

    void park(Map<Long, String> reasons, Scope scope) {
        Objects.requireNonNull(reasons, "reasons");
        Fault fault = gate.enter(Operation.PARK);
        Instant now = clock.instant();
        synchronized (lock) {
            fences.checkFence(scope, "park");
            for (Map.Entry<Long, String> e : reasons.entrySet()) {
                if (e.getKey() == null) {
                    continue;
                }
                StoredRow row = table.committed().remove(e.getKey());
                if (row != null) {
                    row.leaderId = null;
                    row.parkReason = e.getValue();
                    row.parkedAt = now;
                    parked.put(row.id, row);
                }
            }
        }
        gate.leave(Operation.PARK, fault, "park of " + reasons.size() + " ids");
    }

    List<ParkedRecord> parked(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = gate.enter(Operation.PARKED);
        List<ParkedRecord> result = new ArrayList<>();
        synchronized (lock) {
            for (StoredRow row : parked.values()) {
                if (result.size() == limit) {
                    break;
                }
                result.add(row.toParked());
            }
        }
        gate.leave(Operation.PARKED, fault, "parked(" + limit + ")");
        return result;
    }

    List<ParkedRecord> parked(ParkedQuery query) {
        return ParkedPages.page(query, parkedRows());
    }

    long parkedCount(ParkedQuery query) {
        return ParkedPages.count(query, parkedRows());
    }

    Optional<ParkedMessage> parkedMessage(long id) {
        synchronized (lock) {
            StoredRow row = parked.get(id);
            if (row == null) {
                return Optional.empty();
            }
            OutboxMessage m = row.message;
            return Optional.of(new ParkedMessage(row.toParked(), row.createdAt, m == null ? null : m.value(),
                    m == null ? List.of() : m.headers(), row.malformedReason));
        }
    }

    int discard(Collection<Long> ids) {
        Objects.requireNonNull(ids, "ids");
        synchronized (lock) {
            int n = 0;
            for (Long id : ids) {
                if (id != null && parked.remove(id) != null) {
                    n++;
                }
            }
            return n;
        }
    }

    /** See {@link InMemoryStore#replay}. */
    int replay(Collection<Long> ids) {
        Objects.requireNonNull(ids, "ids");
        Fault fault = gate.enter(Operation.REPLAY);
        int replayed = 0;
        Instant now = clock.instant();
        synchronized (lock) {
            NavigableMap<Long, StoredRow> rows = table.committed();
            table.commitAtOnce(); // one transaction, committed at once
            Map<String, Long> firstParkedId = new java.util.HashMap<>();
            Set<Long> replayedIds = new HashSet<>();
            for (Long id : new TreeSet<>(InMemoryRows.nonNull(ids))) {
                StoredRow old = parked.remove(id);
                if (old != null) {
                    long newId = table.nextId();
                    // marked as replayed (KeySequence.REPLAYED: its parked id), as the SQL stores' replay marks it
                    OutboxMessage marked = old.message == null ? null : old.message.withHeader(
                            dev.outbox.Header.of(dev.outbox.KeySequence.REPLAYED, dev.outbox.KeySequence.encode(id)));
                    StoredRow replayedRow = new StoredRow(newId, now, old.topic, old.key, marked,
                            old.malformedReason);
                    replayedRow.messageId = old.messageId;
                    rows.put(newId, replayedRow);
                    replayedIds.add(newId);
                    firstParkedId.putIfAbsent(old.key, id);
                    replayed++;
                }
            }
            List<StoredRow> behind = new ArrayList<>();
            for (StoredRow row : firstParkedId.isEmpty() ? List.<StoredRow>of() : rows.values()) {
                Long first = firstParkedId.get(row.key);
                if (first != null && row.id > first && !replayedIds.contains(row.id)) {
                    behind.add(row);
                }
            }
            for (StoredRow row : behind) { // ascending id: their order is kept
                rows.remove(row.id);
                long newId = table.nextId();
                StoredRow moved = new StoredRow(newId, row.createdAt, row.topic, row.key, row.message,
                        row.malformedReason);
                moved.messageId = row.messageId;
                rows.put(newId, moved);
            }
        }
        gate.leave(Operation.REPLAY, fault, "replay of " + ids.size() + " ids");
        return replayed;
    }

    /** The distinct keys of the parked rows (fault-injected as {@link Operation#PARKED}). */
    Set<String> parkedKeys() {
        Fault fault = gate.enter(Operation.PARKED);
        Set<String> keys = new HashSet<>();
        synchronized (lock) {
            for (StoredRow row : parked.values()) {
                keys.add(row.key);
            }
        }
        gate.leave(Operation.PARKED, fault, "parkedKeys()");
        return keys;
    }

    /** Every parked row in id order, never subject to faults. */
    List<ParkedRecord> parkedRows() {
        synchronized (lock) {
            List<ParkedRecord> result = new ArrayList<>(parked.size());
            for (StoredRow row : parked.values()) {
                result.add(row.toParked());
            }
            return result;
        }
    }

    /** The number of parked rows, never subject to faults. */
    int size() {
        synchronized (lock) {
            return parked.size();
        }
    }
}
