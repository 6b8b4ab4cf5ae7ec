package dev.outbox.testkit;

import dev.outbox.OutboxShards;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The storage fencing and the shards of an {@link InMemoryStore}: whether fencing is on, the outbox's and each
 * shard's leader epoch, the writes refused as fenced, the number of shards and which shard a row is in. A call's
 * {@link Scope} says which shard it sees and which epoch fences its writes.
 *
 * <p>Thread-safe: the epochs are guarded by the store's lock, which the methods marked so expect their caller to
 * hold.
 */
final class InMemoryFences {
    /** An unfenced write: no epoch is checked. */
    static final long UNFENCED = -1;

    /** Which rows and which epoch a call sees: a shard (or -1 for all) and the epoch its writes are fenced by. */
    record Scope(int shard, long fence) {
    }

    /** Every shard's rows, unfenced. */
    static final Scope WHOLE = new Scope(-1, UNFENCED);

    private final Object lock;
    private final InMemoryFaultGate gate;
    private volatile boolean fencing;
    /** The outbox's leader epoch ({@link #acquireEpoch}). Guarded by {@link #lock}. */
    private long epoch;
    private final AtomicLong fencedWrites = new AtomicLong();
    /** The number of shards ({@link #setShards}); fixed before the store is used. */
    private volatile int shards = 1;
    /** Each shard's leader epoch, when sharded. Guarded by {@link #lock}. */
    private long[] shardEpochs = new long[1];

    InMemoryFences(Object lock, InMemoryFaultGate gate) {
        this.lock = lock;
        this.gate = gate;
    }

    void setFencing(boolean on) {
        this.fencing = on;
    }

    boolean fencing() {
        return fencing;
    }

    /** Sets the number of shards, every shard's epoch 0 again. Caller holds {@link #lock}. */
    void setShards(int count) {
        this.shards = count;
        this.shardEpochs = new long[count];
    }

    int shards() {
        return shards;
    }

    /** Shard {@code shard}'s epoch. */
    long epoch(int shard) {
        synchronized (lock) {
            return shardEpochs[OutboxShards.checkIndex(shard, shards)];
        }
    }

    /** The unsharded outbox's epoch. */
    long epoch() {
        synchronized (lock) {
            return epoch;
        }
    }

    long fencedWrites() {
        return fencedWrites.get();
    }

    /** Whether {@code row} is in {@code shard} (any shard: -1). Caller holds {@link #lock}. */
    boolean inShard(StoredRow row, int shard) {
        if (shard < 0) {
            return true;
        }
        if (row.shard < 0) {
            row.shard = OutboxShards.shardOf(row.key, shards);
        }
        return row.shard == shard;
    }

    /** Increments the epoch of {@code shard} (the outbox's: -1) and returns it; fault-injected. */
    long acquireEpoch(int shard) {
        requireFencing("acquireEpoch");
        Fault fault = gate.enter(Operation.ACQUIRE_EPOCH);
        long taken;
        synchronized (lock) {
            taken = shard < 0 ? ++epoch : ++shardEpochs[shard];
        }
        gate.leave(Operation.ACQUIRE_EPOCH, fault, "acquireEpoch()");
        return taken;
    }

    /** The scope of {@code shard}'s writes fenced by {@code epoch}, for a {@code fencedBy} view. */
    Scope fencedBy(int shard, long epoch) {
        requireFencing("fencedBy");
        if (epoch < 1) {
            throw new IllegalArgumentException("epoch must be at least 1 (one acquireEpoch() returned): " + epoch);
        }
        return new Scope(shard, epoch);
    }

    private void requireFencing(String operation) {
        if (!fencing) {
            throw new UnsupportedOperationException(operation + ": fencing is off (InMemoryStore.setFencing)");
        }
    }

    /** Refuses a write fenced by an epoch other than the outbox's. Caller holds {@link #lock}, before any change. */
    void checkFence(Scope scope, String operation) {
        long current = scope.shard() < 0 ? epoch : shardEpochs[scope.shard()];
        if (scope.fence() != UNFENCED && scope.fence() != current) {
            fencedWrites.incrementAndGet();
            throw new StoreFencedException(operation, scope.fence(), current);
        }
    }
}
