package dev.outbox.store.sql;

import dev.outbox.Publisher;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;

import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * A SQL store as a leader holding one epoch writes to it ({@link StorageFencing#fencedBy}): its purge, failure record
 * and park, and its mark and reset ({@link MarkHarvest}), are the store's, fenced by the epoch; every other
 * capability is the store's own. Immutable and thread-safe.
 */
final class FencedSqlStore implements Store, MarkHarvest {
    private final SqlStore store;
    private final long fence;

    FencedSqlStore(SqlStore store, long fence) {
        if (fence < 1) {
            throw new IllegalArgumentException("epoch must be at least 1 (one acquireEpoch() returned): " + fence);
        }
        this.store = store;
        this.fence = fence;
    }

    @Override
    public Publisher publisher() {
        return store.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        return store.mark(leaderId, limit, fence);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        store.reset(leaderId, ids, fence);
    }

    @Override
    public void purge(Collection<Long> ids) {
        store.purge(ids, fence);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        store.retryLater(nextAttempts, fence);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        store.park(reasons, fence);
    }

    /** The store's capabilities, its mark fenced by this view. */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (type == MarkHarvest.class) {
            return store.capability(type).map(own -> type.cast(this));
        }
        return store.capability(type);
    }

    @Override
    public String toString() {
        return store + " fenced by epoch " + fence;
    }
}
