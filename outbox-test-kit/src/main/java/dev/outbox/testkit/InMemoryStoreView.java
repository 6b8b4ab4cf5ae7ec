package dev.outbox.testkit;

import dev.outbox.OutboxShards;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.testkit.InMemoryFences.Scope;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * A view of an {@link InMemoryStore}: one shard's rows (or all), its writes fenced by one epoch (or unfenced);
 * everything else is the store's own. Thread-safe, as the store.
 */
final class InMemoryStoreView implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding,
        ParkedRecords, ParkedKeys, Gauges {
    private final InMemoryStore store;
    private final Scope scope;

    InMemoryStoreView(InMemoryStore store, Scope scope) {
        this.store = store;
        this.scope = scope;
    }

    @Override
    public Publisher publisher() {
        return store.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        return store.harvest.mark(leaderId, limit, scope);
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        return store.harvest.read(after, recheck, limit, scope.shard());
    }

    @Override
    public CommitSignals.CommitWatch watchCommits(Runnable wakeUp) {
        return store.watchCommits(wakeUp);
    }

    @Override
    public long acquireEpoch() {
        return store.fences.acquireEpoch(scope.shard());
    }

    @Override
    public Store fencedBy(long epoch) {
        return new InMemoryStoreView(store, store.fences.fencedBy(scope.shard(), epoch));
    }

    @Override
    public void purge(Collection<Long> ids) {
        store.harvest.purge(ids, scope);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        store.harvest.reset(leaderId, ids, scope);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        store.harvest.retryLater(nextAttempts, scope);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        store.parkedArea.park(reasons, scope);
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        return store.parked(limit);
    }

    @Override
    public int replay(Collection<Long> ids) {
        return store.replay(ids);
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        return store.parked(query);
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        return store.parkedCount(query);
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        return store.parkedMessage(id);
    }

    @Override
    public int discard(Collection<Long> ids) {
        return store.discard(ids);
    }

    @Override
    public Set<String> parkedKeys() {
        return store.parkedKeys();
    }

    @Override
    public long backlog() {
        return store.gauges.backlog(scope.shard());
    }

    @Override
    public long parkedCount() {
        return store.parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        return store.gauges.oldestCreateTime(scope.shard());
    }

    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return store.has(type) ? Store.super.capability(type) : Optional.empty();
    }

    @Override
    public int shards() {
        return 1;
    }

    @Override
    public Store shard(int index) {
        OutboxShards.checkIndex(index, 1);
        return this;
    }

    @Override
    public String toString() {
        return store + (scope.shard() < 0 ? "" : " shard " + scope.shard())
                + (scope.fence() == InMemoryFences.UNFENCED ? "" : " fenced by epoch " + scope.fence());
    }
}
