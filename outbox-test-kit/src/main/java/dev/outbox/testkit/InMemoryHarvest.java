package dev.outbox.testkit;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.testkit.InMemoryFences.Scope;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The harvest of an {@link InMemoryStore}: marking rows ({@code MarkHarvest}), reading them after a cursor
 * ({@code CursorHarvest}), and settling them (purge, reset, retry later), each call in a {@link Scope} (a shard, an
 * epoch its writes are fenced by), fault-injected through the store's {@link InMemoryFaultGate}.
 *
 * <p>Thread-safe: each call is atomic under the store's lock (injected delays are spent outside it).
 */
final class InMemoryHarvest {
    private final Object lock;
    private final InMemoryRows table;
    private final InMemoryFences fences;
    private final InMemoryFaultGate gate;
    private final AtomicLong purged = new AtomicLong();

    InMemoryHarvest(Object lock, InMemoryRows table, InMemoryFences fences, InMemoryFaultGate gate) {
        this.lock = lock;
        this.table = table;
        this.fences = fences;
        this.gate = gate;
    }

    /** How many rows purge calls have deleted in total. */
    long purgedRows() {
        return purged.get();
    }

    MarkResult mark(UUID leaderId, int limit, Scope scope) {
        if (leaderId == null) {
            throw new IllegalArgumentException("leaderId must not be null");
        }
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = gate.enter(Operation.MARK);
        List<OutboxRecord> records = new ArrayList<>();
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        synchronized (lock) {
            fences.checkFence(scope, "mark");
            int taken = 0;
            for (Iterator<StoredRow> it = table.committed().values().iterator(); it.hasNext() && taken < limit; ) {
                StoredRow row = it.next();
                if (leaderId.equals(row.leaderId) || !fences.inShard(row, scope.shard())) {
                    continue;
                }
                row.leaderId = leaderId;
                taken++;
                MarkedRow checked = table.check(row, leaderId);
                if (checked instanceof MarkedRow.Readable readable) {
                    records.add(readable.record());
                } else {
                    rejected.add((MarkResult.Rejected) checked);
                }
            }
        }
        gate.leave(Operation.MARK, fault, "mark(" + leaderId + ", " + limit + ")");
        return new MarkResult(records, rejected);
    }

    ReadResult read(long after, List<IdRange> recheck, int limit, int shard) {
        Objects.requireNonNull(recheck, "recheck");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = gate.enter(Operation.READ);
        List<OutboxRecord> records = new ArrayList<>();
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        long token;
        long horizon;
        synchronized (lock) {
            NavigableMap<Long, StoredRow> rows = table.committed();
            token = table.gapToken();
            horizon = table.horizon();
            TreeMap<Long, StoredRow> matching = new TreeMap<>();
            for (IdRange range : recheck) {
                for (StoredRow row : rows.subMap(range.from(), true, range.to(), true).values()) {
                    if (!fences.inShard(row, shard)) {
                        continue;
                    }
                    matching.put(row.id, row);
                    if (matching.size() > limit) {
                        matching.pollLastEntry();
                    }
                }
            }
            int taken = 0;
            for (StoredRow row : rows.tailMap(after, false).values()) {
                if (!fences.inShard(row, shard)) {
                    continue;
                }
                if (taken++ >= limit) {
                    break;
                }
                matching.put(row.id, row);
            }
            int n = 0;
            for (StoredRow row : matching.values()) {
                if (n++ >= limit) {
                    break;
                }
                MarkedRow checked = table.check(row, row.leaderId);
                if (checked instanceof MarkedRow.Readable readable) {
                    records.add(readable.record());
                } else {
                    rejected.add((MarkResult.Rejected) checked);
                }
            }
        }
        gate.leave(Operation.READ, fault, "read(" + after + ", " + recheck.size() + " ranges, " + limit + ")");
        return new ReadResult(new MarkResult(records, rejected), token, horizon);
    }

    void purge(Collection<Long> ids, Scope scope) {
        Objects.requireNonNull(ids, "ids");
        Fault fault = gate.enter(Operation.PURGE);
        synchronized (lock) {
            fences.checkFence(scope, "purge");
            for (Long id : ids) {
                if (id != null && table.committed().remove(id) != null) {
                    purged.incrementAndGet();
                }
            }
        }
        gate.leave(Operation.PURGE, fault, "purge of " + ids.size() + " ids");
    }

    void reset(UUID leaderId, Collection<Long> ids, Scope scope) {
        if (leaderId == null) {
            throw new IllegalArgumentException("leaderId must not be null");
        }
        Objects.requireNonNull(ids, "ids");
        Fault fault = gate.enter(Operation.RESET);
        synchronized (lock) {
            fences.checkFence(scope, "reset");
            for (Long id : new TreeSet<>(InMemoryRows.nonNull(ids))) {
                StoredRow row = table.committed().get(id);
                if (row != null) {
                    row.attempts++;
                    if (leaderId.equals(row.leaderId)) {
                        row.leaderId = null;
                    }
                }
            }
        }
        gate.leave(Operation.RESET, fault, "reset(" + leaderId + ") of " + ids.size() + " ids");
    }

    void retryLater(Map<Long, Instant> nextAttempts, Scope scope) {
        Objects.requireNonNull(nextAttempts, "nextAttempts");
        TreeMap<Long, Instant> sorted = new TreeMap<>();
        for (Map.Entry<Long, Instant> e : nextAttempts.entrySet()) {
            if (e.getKey() == null) {
                throw new IllegalArgumentException("nextAttempts contains a null id");
            }
            if (e.getValue() == null) {
                throw new IllegalArgumentException("nextAttempts has no time for id " + e.getKey());
            }
            sorted.put(e.getKey(), e.getValue());
        }
        Fault fault = gate.enter(Operation.RETRY_LATER);
        synchronized (lock) {
            fences.checkFence(scope, "retryLater");
            for (Map.Entry<Long, Instant> e : sorted.entrySet()) {
                StoredRow row = table.committed().get(e.getKey());
                if (row != null) {
                    row.attempts++;
                    row.nextAttemptAt = e.getValue();
                }
            }
        }
        gate.leave(Operation.RETRY_LATER, fault, "retryLater of " + nextAttempts.size() + " ids");
    }
}
