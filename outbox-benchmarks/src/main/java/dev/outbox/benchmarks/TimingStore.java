package dev.outbox.benchmarks;

import dev.outbox.Publisher;
import dev.outbox.internal.StreamStore;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link Store} that passes everything to the real one and adds up how often, how long and with how many rows
 * the harvest ({@code mark} or {@code read}) and {@code purge} ran: where the Dispatcher's time goes. It wraps the
 * capabilities it times (and those that hand out stores: fencing, shards) and forwards every other. Thread-safe.
 */
final class TimingStore implements Store, MarkHarvest, CursorHarvest, StorageFencing, Sharding {
    private final Store delegate;
    private final MarkHarvest marking;
    private final CursorHarvest reading;
    private final boolean fencing;
    private final boolean skipPurge;
    final LongAdder marks;
    final LongAdder markNanos;
    final LongAdder marked;
    final LongAdder purges;
    final LongAdder purgeNanos;
    final LongAdder purged;

    /**
     * @param fencing whether to pass on the store's storage fencing ({@link StorageFencing}); false hides it, so
     *                that the Dispatcher writes unfenced, as before fencing existed
     */
    TimingStore(Store delegate, boolean fencing) {
        this(delegate, fencing, false);
    }

    /** With {@code skipPurge}, {@link #purge} deletes nothing (the drain-nopurge upper bound). */
    TimingStore(Store delegate, boolean fencing, boolean skipPurge) {
        delegate = StreamStore.of(delegate); // a WAL store: time the dispatcher's stream harvest of it, as it runs
        this.delegate = delegate;
        this.marking = delegate.capability(MarkHarvest.class).orElse(null);
        this.reading = delegate.capability(CursorHarvest.class).orElse(null);
        this.fencing = fencing;
        this.skipPurge = skipPurge;
        this.marks = new LongAdder();
        this.markNanos = new LongAdder();
        this.marked = new LongAdder();
        this.purges = new LongAdder();
        this.purgeNanos = new LongAdder();
        this.purged = new LongAdder();
    }

    /** {@code delegate} (a fenced view, a shard) timed into the counters of {@code shared}. */
    private TimingStore(Store delegate, TimingStore shared) {
        this.delegate = delegate;
        this.marking = delegate.capability(MarkHarvest.class).orElse(null);
        this.reading = delegate.capability(CursorHarvest.class).orElse(null);
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
    public <T> Optional<T> capability(Class<T> type) {
        if (type == StorageFencing.class && !fencing) {
            return Optional.empty();
        }
        if (type == MarkHarvest.class || type == CursorHarvest.class || type == StorageFencing.class
                || type == Sharding.class) {
            return delegate.capability(type).map(own -> type.cast(this));
        }
        return delegate.capability(type);
    }

    @Override
    public long acquireEpoch() {
        return delegate.capability(StorageFencing.class).orElseThrow().acquireEpoch();
    }

    @Override
    public Store fencedBy(long epoch) {
        return new TimingStore(delegate.capability(StorageFencing.class).orElseThrow().fencedBy(epoch), this);
    }

    @Override
    public int shards() {
        return Sharding.of(delegate);
    }

    /** The delegate's shard, timed into this store's counters (the summary adds the shards up). */
    @Override
    public Store shard(int index) {
        Sharding sharding = delegate.capability(Sharding.class).orElseThrow();
        return sharding.shards() == 1 ? this : new TimingStore(sharding.shard(index), this);
    }

    @Override
    public Publisher publisher() {
        return delegate.publisher();
    }

    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        long t = System.nanoTime();
        MarkResult r = marking.mark(leaderId, limit);
        markNanos.add(System.nanoTime() - t);
        marks.increment();
        marked.add(r.size());
        return r;
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        marking.reset(leaderId, ids);
    }

    @Override
    public boolean readWaits() {
        return reading.readWaits();
    }

    @Override
    public void wakeRead() {
        reading.wakeRead();
    }

    @Override
    public void harvestStopped() {
        reading.harvestStopped();
    }

    /** Timed like {@link #mark}: the summary's "reads or marks". */
    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        long t = System.nanoTime();
        ReadResult r = reading.read(after, recheck, limit);
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
    public void retryLater(Map<Long, Instant> nextAttempts) {
        delegate.retryLater(nextAttempts);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        delegate.park(reasons);
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
