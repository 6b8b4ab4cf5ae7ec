package dev.outbox.it;

import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.time.Instant;
import java.util.Optional;

/**
 * One dispatcher's store as the scenario sees it: a real {@code PostgresStore} on the node's own connection
 * pool, whose purges are logged in the {@link SendLog}, and which can be {@linkplain #cut() cut off}: every
 * later call fails as if the process had died (its sessions are killed at the same time by the scenario), so a
 * crashed dispatcher changes nothing in the database any more.
 *
 * <p>It forwards every method of the port, so that the engine sees what the real store offers: storage fencing (the
 * fenced view the leader writes through, {@link #fencedBy}) and shards ({@link #shard}) are node stores too, sharing
 * this one's cut. {@code NodeStoreTest} fails if a method of {@link Store} is not overridden here, or if fencing is
 * hidden.
 */
final class NodeStore implements Store {
    private final String node;
    private final Store delegate;
    private final SendLog log;
    /** Shared by this store and the views made from it (fenced, per shard): one crash cuts them all. */
    private final java.util.concurrent.atomic.AtomicBoolean cut;

    NodeStore(String node, Store delegate, SendLog log) {
        this(node, delegate, log, new java.util.concurrent.atomic.AtomicBoolean());
    }

    private NodeStore(String node, Store delegate, SendLog log, java.util.concurrent.atomic.AtomicBoolean cut) {
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

    @Override
    public Publisher publisher() {
        return delegate.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        check("mark");
        return delegate.mark(leaderId, limit);
    }

    @Override
    public boolean supportsRead() {
        return delegate.supportsRead();
    }

    @Override
    public boolean supportsMark() {
        return delegate.supportsMark();
    }

    @Override
    public boolean readWaits() {
        return delegate.readWaits();
    }

    @Override
    public void wakeRead() {
        delegate.wakeRead();
    }

    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        return delegate.watchCommits(wakeUp);
    }

    @Override
    public void harvestStopped() {
        delegate.harvestStopped();
    }

    @Override
    public java.util.OptionalLong retainedBytes() {
        return delegate.retainedBytes();
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        check("read");
        return delegate.read(after, recheck, limit);
    }

    @Override
    public void purge(Collection<Long> ids) {
        check("purge");
        long started = System.nanoTime();
        delegate.purge(ids);
        log.purged(node, ids, started);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        check("reset");
        delegate.reset(leaderId, ids);
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
        return delegate.parked(limit);
    }

    @Override
    public int replay(Collection<Long> ids) {
        check("replay");
        return delegate.replay(ids);
    }

    @Override
    public boolean supportsHoldKey() {
        return delegate.supportsHoldKey();
    }

    @Override
    public java.util.Set<String> parkedKeys() {
        check("parkedKeys");
        return delegate.parkedKeys();
    }

    @Override
    public long backlog() {
        check("backlog");
        return delegate.backlog();
    }

    @Override
    public long parkedCount() {
        check("parkedCount");
        return delegate.parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        check("oldestCreateTime");
        return delegate.oldestCreateTime();
    }

    @Override
    public boolean supportsFencing() {
        return delegate.supportsFencing();
    }

    @Override
    public long acquireEpoch() {
        check("acquireEpoch");
        return delegate.acquireEpoch();
    }

    @Override
    public Store fencedBy(long epoch) {
        return new NodeStore(node, delegate.fencedBy(epoch), log, cut);
    }

    @Override
    public int shards() {
        return delegate.shards();
    }

    @Override
    public Store shard(int index) {
        return new NodeStore(node, delegate.shard(index), log, cut);
    }
}
