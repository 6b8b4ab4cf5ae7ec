package dev.outbox.internal;

import dev.outbox.Publisher;
import dev.outbox.spi.CommitLog;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What the engine harvests when a store offers a {@link CommitLog} (the Postgres store's WAL harvest): the store
 * seen through the engine's own {@link StreamHarvest}, as a store with a {@link CursorHarvest} whose read waits for
 * messages. A purge finishes the messages (which confirms the stream and appends to the ledger), a failure record
 * lives in memory, a park writes the pending messages through {@link CommitLog#park} and then finishes them, and
 * the gauges count what this leader received and has not finished. Every other capability is the store's own.
 *
 * <p>Each dispatcher makes its own view ({@link #of}): what a leader received lives in its memory only.
 *
 * <p>Not API: public so that the test kit's stream contract and the benchmarks harvest a streamed store as the
 * dispatcher does. Thread-safe as {@link StreamHarvest} is: one reading thread, any number of finishing threads.
 */
public final class StreamStore implements Store, CursorHarvest, Gauges {
    private final Store store;
    private final CommitLog log;
    private final StreamHarvest harvest;

    private StreamStore(Store store, CommitLog log) {
        this.store = store;
        this.log = log;
        this.harvest = new StreamHarvest(log);
    }

    /**
     * The store as the engine harvests it: a new view over its {@link CommitLog} if it offers one, else the store
     * itself.
     *
     * @param store the store; not null
     * @return the view, or {@code store}
     */
    public static Store of(Store store) {
        Objects.requireNonNull(store, "store");
        if (store instanceof StreamStore) {
            return store;
        }
        Optional<CommitLog> log = store.capability(CommitLog.class);
        return log.isPresent() ? new StreamStore(store, log.get()) : store;
    }

    @Override
    public Publisher publisher() {
        return store.publisher();
    }

    /** The messages are acknowledged: forgets them and confirms the stream as far as every earlier one is too. */
    @Override
    public void purge(Collection<Long> ids) {
        harvest.finished(Objects.requireNonNull(ids, "ids"));
    }

    /** In memory: a new stream (of this leader or the next) delivers the message with zero attempts. */
    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        harvest.retryLater(Objects.requireNonNull(nextAttempts, "nextAttempts"));
    }

    /** Writes the pending messages to the store's parked area, then counts them finished. */
    @Override
    public void park(Map<Long, String> reasons) {
        Map<Long, StreamHarvest.Pending> found = harvest.pending(Objects.requireNonNull(reasons, "reasons").keySet());
        if (found.isEmpty()) {
            return;
        }
        List<CommitLog.Parked> parked = new ArrayList<>(found.size());
        for (StreamHarvest.Pending p : found.values()) {
            parked.add(new CommitLog.Parked(p.message(), p.row(), reasons.get(p.id())));
        }
        log.park(parked);
        harvest.finished(found.keySet());
    }

    /** The read, its wait and the gauges are this view's; the log itself is not offered again; the rest is the store's. */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        if (type == CursorHarvest.class || type == Gauges.class || type == Store.class) {
            return Optional.of(type.cast(this));
        }
        if (type == CommitLog.class) {
            return Optional.empty();
        }
        return store.capability(type);
    }

    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        return harvest.read(after, recheck, limit);
    }

    /** Whether the store's read wait is above zero: the harvest then reads again straight after an empty read. */
    @Override
    public boolean readWaits() {
        return log.readWait().compareTo(Duration.ZERO) > 0;
    }

    @Override
    public void wakeRead() {
        harvest.wakeRead();
    }

    /** Closes the stream, which releases the slot for the next leader, and forgets what was pending. */
    @Override
    public void harvestStopped() {
        harvest.stop();
    }

    /** What this leader received and has not finished. */
    @Override
    public long backlog() {
        return harvest.pendingCount();
    }

    @Override
    public long parkedCount() {
        return store.capability(Gauges.class).map(Gauges::parkedCount).orElse(0L);
    }

    /** The commit time of the oldest message pending here. */
    @Override
    public Optional<Instant> oldestCreateTime() {
        return harvest.oldestCommitTime();
    }

    /** Nothing waits in a table: empty, and the dispatcher measures the lag from the commit time by its own clock. */
    @Override
    public Optional<Duration> oldestAge() {
        return Optional.empty();
    }

    @Override
    public OptionalLong retainedBytes() {
        return store.capability(Gauges.class).map(Gauges::retainedBytes).orElse(OptionalLong.empty());
    }

    /**
     * Whether a stream is open (for tests and the simulation's trace).
     *
     * @return true between the read that opened a stream and its failure or the stop
     */
    public boolean streaming() {
        return harvest.streaming();
    }

    /**
     * The store this view harvests.
     *
     * @return the store
     */
    public Store store() {
        return store;
    }

    @Override
    public String toString() {
        return "StreamStore{" + store + ", pending=" + harvest.pendingCount() + '}';
    }
}
