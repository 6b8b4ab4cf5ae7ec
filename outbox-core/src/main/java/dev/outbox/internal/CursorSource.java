package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;

import java.time.Duration;
import java.util.UUID;

/**
 * The cursor harvest ({@code DispatcherConfig.Harvest.CURSOR}, the default, and the stream harvest of a store whose
 * read waits): reads committed rows above the {@link HarvestCursor} and in its gaps, changing nothing in the table,
 * and queues them. A failed read changed nothing, so it is only retried after a backoff: the cursor stays where it
 * was. Once caught up, the table is read from its head again every {@code rescanInterval}, a safety net.
 */
final class CursorSource extends HarvestSource {
    private final CursorHarvest reads;
    private final long rescanNanos;
    private long lastRescan;
    private boolean lastFull = true;

    CursorSource(Parts parts, Duration rescanInterval) {
        super(parts, "read");
        this.reads = Store.require(parts.store(), CursorHarvest.class, "harvest CURSOR");
        this.rescanNanos = rescanInterval.toNanos();
        this.lastRescan = parts.runtime().nanoTime();
    }

    @Override
    int harvest(UUID markAs, int room, int markLimit, long markEpoch, Backoff.Sequence failures) {
        EngineState state = parts.state();
        EngineRuntime runtime = parts.runtime();
        HarvestCursor cursor = state.cursor;
        HarvestCursor.Request request;
        state.lock.lock();
        try {
            state.schedule.readStarted();
            request = cursor.request(room);
        } finally {
            state.lock.unlock();
        }
        ReadResult result;
        try {
            long readStart = runtime.nanoTime();
            result = reads.read(request.after(), runtime.protocolOrder().recheck(request.recheck()), request.limit());
            parts.events().callbacks.marked(result.size(), Duration.ofNanos(runtime.nanoTime() - readStart)); // hook
            parts.events().health.marked(runtime.clock().instant());
            failures.reset();
            outage.succeeded();
        } catch (RuntimeException e) {
            readEnded();
            Duration wait = failures.next();
            outage.failed(wait, e);
            parts.events().failure("read", e);
            parts.pause().accept(wait);
            return -1;
        }
        if (!result.rows().rejected().isEmpty()) {
            parkRejected(result.rows().rejected());
        }
        int unexpected = 0;
        state.lock.lock();
        try {
            if (state.leadership.epoch() == markEpoch && !state.leadership.remarkNeeded()) {
                HarvestCursor.Advance advance = cursor.advance(request, result);
                if (!advance.stale()) {
                    for (OutboxRecord r : result.rows().records()) {
                        if (state.schedule.offer(r) && advance.unexpected().contains(r.id())) {
                            unexpected++;
                        }
                    }
                }
            }
            // else: leadership changed or the lease lapsed meanwhile; the cursor was rewound to the head.
        } finally {
            state.schedule.readEnded();
            state.lock.unlock();
        }
        if (unexpected > 0) {
            log.warn("{}: {} rows appeared below the cursor where the store said none could (ids reset by hand, or"
                    + " a writer transaction longer than the store's late-commit window); publishing them now,"
                    + " possibly after later rows of their keys", parts.name(), unexpected);
        }
        lastFull = result.size() >= request.limit();
        return result.size();
    }

    @Override
    boolean lastFull() {
        return lastFull;
    }

    @Override
    boolean waits() {
        return reads.readWaits();
    }

    @Override
    void caughtUp(long nowNanos) {
        if (nowNanos - lastRescan < rescanNanos) {
            return;
        }
        // Caught up: read the table from its head once more, a safety net (see HarvestCursor).
        lastRescan = nowNanos;
        EngineState state = parts.state();
        state.lock.lock();
        try {
            state.cursor.rescan();
        } finally {
            state.lock.unlock();
        }
    }
}
