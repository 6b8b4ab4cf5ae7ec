package dev.outbox.store.sql;

import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;

/**
 * A SQL store as a leader holding one epoch writes to it ({@link Store#fencedBy}): its mark, purge, reset, failure
 * record and park are the store's, fenced by the epoch; everything else is the store's own. Immutable and
 * thread-safe.
 */
final class FencedSqlStore implements Store {
    private final SqlStore store;
    private final long fence;

    FencedSqlStore(SqlStore store, long fence) {
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
    public boolean supportsMark() {
        return store.supportsMark();
    }

    @Override
    public boolean supportsRead() {
        return store.supportsRead();
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        return store.read(after, recheck, limit);
    }

    @Override
    public boolean readWaits() {
        return store.readWaits();
    }

    @Override
    public void wakeRead() {
        store.wakeRead();
    }

    @Override
    public CommitWatch watchCommits(Runnable wakeUp) {
        return store.watchCommits(wakeUp);
    }

    @Override
    public void harvestStopped() {
        store.harvestStopped();
    }

    @Override
    public OptionalLong retainedBytes() {
        return store.retainedBytes();
    }

    @Override
    public boolean supportsFencing() {
        return true;
    }

    @Override
    public long acquireEpoch() {
        return store.acquireEpoch();
    }

    @Override
    public Store fencedBy(long epoch) {
        return store.fencedBy(epoch);
    }

    @Override
    public void purge(Collection<Long> ids) {
        store.purge(ids, fence);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        store.reset(leaderId, ids, fence);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        store.retryLater(nextAttempts, fence);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        store.park(reasons, fence);
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
    public boolean supportsHoldKey() {
        return store.supportsHoldKey();
    }

    @Override
    public Set<String> parkedKeys() {
        return store.parkedKeys();
    }

    @Override
    public long backlog() {
        return store.backlog();
    }

    @Override
    public long parkedCount() {
        return store.parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        return store.oldestCreateTime();
    }

    @Override
    public String toString() {
        return store + " fenced by epoch " + fence;
    }
}
