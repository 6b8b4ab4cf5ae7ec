package dev.outbox.benchmarks;

import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.LongAdder;
import java.time.Instant;
import java.util.Optional;

/**
 * A {@link Store} that passes everything to the real one and adds up how often, how long and with how many rows
 * {@code mark} and {@code purge} ran: where the Dispatcher's time goes. Thread-safe.
 */
final class TimingStore implements Store {
    private final Store delegate;
    private final boolean fencing;
    private final boolean skipPurge;
    final LongAdder marks;
    final LongAdder markNanos;
    final LongAdder marked;
    final LongAdder purges;
    final LongAdder purgeNanos;
    final LongAdder purged;

    /**
     * @param fencing whether to pass on the store's storage fencing ({@link Store#supportsFencing()}); false hides
     *                it, so that the Dispatcher writes unfenced, as before fencing existed
     */
    TimingStore(Store delegate, boolean fencing) {
        this(delegate, fencing, false);
    }

    /** With {@code skipPurge}, {@link #purge} deletes nothing (the drain-nopurge upper bound). */
    TimingStore(Store delegate, boolean fencing, boolean skipPurge) {
        this.delegate = delegate;
        this.fencing = fencing;
        this.skipPurge = skipPurge;
        this.marks = new LongAdder();
        this.markNanos = new LongAdder();
        this.marked = new LongAdder();
        this.purges = new LongAdder();
        this.purgeNanos = new LongAdder();
        this.purged = new LongAdder();
    }

    /** {@code delegate} (a fenced view) timed into the counters of {@code shared}. */
    private TimingStore(Store delegate, TimingStore shared) {
        this.delegate = delegate;
        this.fencing = shared.fencing;
        this.skipPurge = shared.skipPurge;
        this.marks = shared.marks;
        this.markNanos = shared.markNanos;
        this.marked = shared.marked;
        this.purges = shared.purges;
        this.purgeNanos = shared.purgeNanos;
        this.purged = shared.purged;
    }

    @Override
    public boolean supportsFencing() {
        return fencing && delegate.supportsFencing();
    }

    @Override
    public long acquireEpoch() {
        return delegate.acquireEpoch();
    }

    @Override
    public Store fencedBy(long epoch) {
        return new TimingStore(delegate.fencedBy(epoch), this);
    }

    @Override
    public int shards() {
        return delegate.shards();
    }

    /** The delegate's shard, timed into this store's counters (the summary adds the shards up). */
    @Override
    public Store shard(int index) {
        return delegate.shards() == 1 ? Store.super.shard(index) : new TimingStore(delegate.shard(index), this);
    }

    @Override
    public Publisher publisher() {
        return delegate.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        long t = System.nanoTime();
        MarkResult r = delegate.mark(leaderId, limit);
        markNanos.add(System.nanoTime() - t);
        marks.increment();
        marked.add(r.size());
        return r;
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

    /** Timed like {@link #mark}: the summary's "reads or marks". */
    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        long t = System.nanoTime();
        ReadResult r = delegate.read(after, recheck, limit);
        markNanos.add(System.nanoTime() - t);
        marks.increment();
        marked.add(r.size());
        return r;
    }

    @Override
    public void purge(Collection<Long> ids) {
        long t = System.nanoTime();
        if (!skipPurge) {
            delegate.purge(ids);
        }
        purgeNanos.add(System.nanoTime() - t);
        purges.increment();
        purged.add(ids.size());
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        delegate.reset(leaderId, ids);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        delegate.retryLater(nextAttempts);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        delegate.park(reasons);
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        return delegate.parked(limit);
    }

    @Override
    public int replay(Collection<Long> ids) {
        return delegate.replay(ids);
    }

    @Override
    public boolean supportsHoldKey() {
        return delegate.supportsHoldKey();
    }

    @Override
    public java.util.Set<String> parkedKeys() {
        return delegate.parkedKeys();
    }

    @Override
    public long backlog() {
        return delegate.backlog();
    }

    @Override
    public long parkedCount() {
        return delegate.parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        return delegate.oldestCreateTime();
    }

    /** A one-line summary over {@code seconds} of wall time. */
    String summary(double seconds) {
        long m = Math.max(1, marks.sum());
        long p = Math.max(1, purges.sum());
        return Report.fmt("%,d reads or marks of %.0f rows avg, %.1f ms avg, %.0f %% of the time; %,d purges of %.0f rows avg,"
                        + " %.1f ms avg, %.0f %% of the time", marks.sum(), marked.sum() / (double) m,
                markNanos.sum() / 1e6 / m, 100 * markNanos.sum() / 1e9 / seconds, purges.sum(),
                purged.sum() / (double) p, purgeNanos.sum() / 1e6 / p, 100 * purgeNanos.sum() / 1e9 / seconds);
    }
}
