package dev.outbox.testkit;

import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.time.Instant;
import java.util.Optional;

/**
 * The gauges of an {@link InMemoryStore} ({@code Gauges}): the backlog and the head row's create time of a shard
 * (or of all), and the parked count, each fault-injected through the store's {@link InMemoryFaultGate}.
 *
 * <p>Thread-safe: each call reads under the store's lock (injected delays are spent outside it).
 */
final class InMemoryGauges {
    private final Object lock;
    private final InMemoryRows table;
    private final InMemoryParkedArea parked;
    private final InMemoryFences fences;
    private final InMemoryFaultGate gate;

    InMemoryGauges(Object lock, InMemoryRows table, InMemoryParkedArea parked, InMemoryFences fences,
                   InMemoryFaultGate gate) {
        this.lock = lock;
        this.table = table;
        this.parked = parked;
        this.fences = fences;
        this.gate = gate;
    }

    /** The committed, unparked rows of {@code shard} (all: -1). */
    long backlog(int shard) {
        Fault fault = gate.enter(Operation.BACKLOG);
        long n;
        synchronized (lock) {
            n = shard < 0 ? table.committed().size()
                    : table.committed().values().stream().filter(r -> fences.inShard(r, shard)).count();
        }
        gate.leave(Operation.BACKLOG, fault, "backlog()");
        return n;
    }

    long parkedCount() {
        Fault fault = gate.enter(Operation.PARKED_COUNT);
        long n = parked.size();
        gate.leave(Operation.PARKED_COUNT, fault, "parkedCount()");
        return n;
    }

    /** The create time of the first committed row of {@code shard} (all: -1). */
    Optional<Instant> oldestCreateTime(int shard) {
        Fault fault = gate.enter(Operation.OLDEST);
        Optional<Instant> oldest;
        synchronized (lock) {
            oldest = table.committed().values().stream().filter(r -> fences.inShard(r, shard)).findFirst()
                    .map(r -> r.createdAt);
        }
        gate.leave(Operation.OLDEST, fault, "oldestCreateTime()");
        return oldest;
    }
}
