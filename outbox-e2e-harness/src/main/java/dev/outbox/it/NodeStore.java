package dev.outbox.it;

import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.internal.StreamStore;
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
import dev.outbox.spi.StoreException;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One dispatcher's store as the scenario sees it: a real {@code PostgresStore} on the node's own connection
 * pool, whose purges are logged in the {@link SendLog}, and which can be {@linkplain #cut() cut off}: every
 * later call fails as if the process had died (its sessions are killed at the same time by the scenario), so a
 * crashed dispatcher changes nothing in the database any more.
 *
 * <p>It has exactly the capabilities of the store it wraps, each cut with it, so that the engine sees what the real
 * store offers: storage fencing (the fenced view the leader writes through, {@link #fencedBy}) and shards
 * ({@link #shard}) are node stores too, sharing this one's cut. {@code NodeStoreTest} fails if a capability of the
 * real store is hidden here, or a call through one is not cut.
 */
final class NodeStore implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding,
        ParkedRecords, ParkedKeys, Gauges {
    private final String node;
    private final Store delegate;
    private final SendLog log;
    /** Shared by this store and the views made from it (fenced, per shard): one crash cuts them all. */
    private final AtomicBoolean cut;

    /**
     * A node store over {@code delegate}; a WAL store is wrapped as the dispatcher harvests it (its stream harvest),
     * so that the dispatcher's purges, parks and reads of it come through here and are logged and cut.
     */
    NodeStore(String node, Store delegate, SendLog log) {
        this(node, StreamStore.of(delegate), log, new AtomicBoolean());
    }

    private NodeStore(String node, Store delegate, SendLog log, AtomicBoolean cut) {
        this.node = node;
        this.delegate = delegate;
        this.log = log;
        this.cut = cut;
    }

    void cut() {
        cut.set(true);
    }

    private void check(String operation) {
        if (cut.get()) {
            throw new StoreException(node + " has crashed: no database session for " + operation, null, true);
        }
    }

    /** The delegate's {@code type}; only asked for capabilities {@link #capability} said it has. */
    private <T> T own(Class<T> type) {
        return delegate.capability(type).orElseThrow();
    }

    /** The wrapped store's capabilities, every one of them through this node store (and so cut with it). */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return delegate.capability(type).map(own -> type.cast(this));
    }

    @Override
    public Publisher publisher() {
        return delegate.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        check("mark");
        return own(MarkHarvest.class).mark(leaderId, limit);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        check("reset");
        own(MarkHarvest.class).reset(leaderId, ids);
    }

    @Override
    public boolean readWaits() {
        return own(CursorHarvest.class).readWaits();
    }

    @Override
    public void wakeRead() {
        own(CursorHarvest.class).wakeRead();
    }

    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        return own(CommitSignals.class).watchCommits(wakeUp);
    }

    @Override
    public void harvestStopped() {
        own(CursorHarvest.class).harvestStopped();
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        check("read");
        return own(CursorHarvest.class).read(after, recheck, limit);
    }

    @Override
    public void purge(Collection<Long> ids) {
        check("purge");
        long started = System.nanoTime();
        delegate.purge(ids);
        log.purged(node, ids, started);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        check("retryLater");
        delegate.retryLater(nextAttempts);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        check("park");
        delegate.park(reasons);
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        check("parked");
        return own(ParkedRecords.class).parked(limit);
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        check("parked");
        return own(ParkedRecords.class).parked(query);
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        check("parkedCount");
        return own(ParkedRecords.class).parkedCount(query);
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        check("parkedMessage");
        return own(ParkedRecords.class).parkedMessage(id);
    }

    @Override
    public int replay(Collection<Long> ids) {
        check("replay");
        return own(ParkedRecords.class).replay(ids);
    }

    @Override
    public int discard(Collection<Long> ids) {
        check("discard");
        return own(ParkedRecords.class).discard(ids);
    }

    @Override
    public Set<String> parkedKeys() {
        check("parkedKeys");
        return own(ParkedKeys.class).parkedKeys();
    }

    @Override
    public long backlog() {
        check("backlog");
        return own(Gauges.class).backlog();
    }

    @Override
    public long parkedCount() {
        check("parkedCount");
        return own(Gauges.class).parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        check("oldestCreateTime");
        return own(Gauges.class).oldestCreateTime();
    }

    @Override
    public Optional<java.time.Duration> oldestAge() {
        check("oldestAge");
        return own(Gauges.class).oldestAge();
    }

    @Override
    public OptionalLong retainedBytes() {
        return own(Gauges.class).retainedBytes();
    }

    @Override
    public long acquireEpoch() {
        check("acquireEpoch");
        return own(StorageFencing.class).acquireEpoch();
    }

    @Override
    public Store fencedBy(long epoch) {
        return new NodeStore(node, own(StorageFencing.class).fencedBy(epoch), log, cut);
    }

    @Override
    public int shards() {
        return own(Sharding.class).shards();
    }

    @Override
    public Store shard(int index) {
        return new NodeStore(node, own(Sharding.class).shard(index), log, cut);
    }
}
