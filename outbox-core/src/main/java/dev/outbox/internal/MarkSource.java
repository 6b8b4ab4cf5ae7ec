package dev.outbox.internal;

import dev.outbox.OutboxRecord;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StoreFencedException;

import java.time.Duration;
import java.util.UUID;

/**
 * The mark harvest ({@code DispatcherConfig.Harvest.MARK}): stamps the leader id on the oldest rows not marked with
 * it ({@link dev.outbox.spi.MarkHarvest#mark}, fenced with a fencing store) and queues them. A failed mark rewinds
 * globally: it may have committed rows this leader never saw, which later marks under the same id would skip, so the
 * leader takes a fresh id and marks from the head again.
 */
final class MarkSource extends HarvestSource {
    private boolean lastFull;

    MarkSource(Parts parts) {
        super(parts, "mark");
    }

    @Override
    int harvest(UUID markAs, int room, int markLimit, long markEpoch, Backoff.Sequence failures) {
        EngineState state = parts.state();
        EngineRuntime runtime = parts.runtime();
        int limit = Math.min(room, markLimit);
        state.lock.lock();
        try {
            state.schedule.readStarted();
        } finally {
            state.lock.unlock();
        }
        MarkResult result;
        try {
            long markStart = runtime.nanoTime();
            result = parts.writes().marks().mark(markAs, limit);
            parts.events().callbacks.marked(result.size(), Duration.ofNanos(runtime.nanoTime() - markStart)); // hook
            parts.events().health.marked(runtime.clock().instant());
            failures.reset();
            outage.succeeded();
        } catch (StoreFencedException e) {
            readEnded();
            parts.fences().byStore("mark", e);
            return -1;
        } catch (RuntimeException e) {
            readEnded();
            Duration wait = failures.next();
            outage.failed(wait, e); // the retry marks under a fresh leader id
            parts.events().failure("mark", e);
            state.remark();
            parts.pause().accept(wait);
            return -1;
        }
        if (!result.rejected().isEmpty()) {
            parkRejected(result.rejected());
        }
        state.lock.lock();
        try {
            if (state.leadership.epoch() == markEpoch && !state.leadership.remarkNeeded()) {
                for (OutboxRecord r : result.records()) {
                    state.schedule.offer(r);
                }
            }
            // else: leadership changed or the lease lapsed meanwhile; the next mark takes these again.
        } finally {
            state.schedule.readEnded();
            state.lock.unlock();
        }
        lastFull = result.size() >= limit;
        return result.size();
    }

    @Override
    boolean lastFull() {
        return lastFull;
    }
}
