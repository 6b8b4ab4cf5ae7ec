package dev.outbox.examples;

import org.HdrHistogram.Histogram;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Measures commit-to-consume latency inside one process: writers note when an order was due by their schedule
 * and when they commit it, the consumer notes when its event first arrives. Both use {@link System#nanoTime()},
 * which is why the demo's consumer runs in the same JVM. Latencies go into HdrHistograms (fixed memory, three
 * significant digits, up to an hour). Besides commit-to-consume, the clock keeps due-to-consume: measured from when
 * the writers' open-loop schedule wanted the order placed, it is corrected for coordinated omission (an order placed
 * late because its writer was stuck counts the time it waited). Thread-safe.
 */
final class LatencyClock {
    /** Percentiles of one histogram, in milliseconds; all -1 when nothing was measured. */
    record Percentiles(long count, double p50, double p99, double max) {
        static Percentiles of(Histogram nanos) {
            if (nanos.getTotalCount() == 0) {
                return new Percentiles(0, -1, -1, -1);
            }
            return new Percentiles(nanos.getTotalCount(), nanos.getValueAtPercentile(50) / 1e6,
                    nanos.getValueAtPercentile(99) / 1e6, nanos.getMaxValue() / 1e6);
        }

        /** {@code p50 … ms, p99 … ms, max … ms}, or "not measured". */
        String describe() {
            return count == 0 ? "not measured" : String.format("p50 %.1f ms, p99 %.1f ms, max %.1f ms", p50, p99, max);
        }
    }

    private final Map<Long, long[]> pending = new ConcurrentHashMap<>();
    private final Histogram commitToConsume = new Histogram(TimeUnit.HOURS.toNanos(1), 3);
    private final Histogram dueToConsume = new Histogram(TimeUnit.HOURS.toNanos(1), 3);

    /** The order, due at {@code dueNanos} ({@link System#nanoTime()}) by its writer's schedule, is about to commit. */
    void committing(long orderId, long dueNanos) {
        pending.put(orderId, new long[]{dueNanos, System.nanoTime()});
    }

    /** The order's transaction was rolled back (or never got an id). */
    void forget(long orderId) {
        pending.remove(orderId);
    }

    /** The order's event arrived for the first time; records its latencies. */
    void consumed(long orderId) {
        long[] times = pending.remove(orderId);
        if (times != null) {
            long now = System.nanoTime();
            record(now - times[1], now - times[0]);
        }
    }

    private synchronized void record(long sinceCommit, long sinceDue) {
        long highest = commitToConsume.getHighestTrackableValue();
        commitToConsume.recordValue(Math.min(highest, Math.max(0, sinceCommit)));
        dueToConsume.recordValue(Math.min(highest, Math.max(0, sinceDue)));
    }

    /** Commit-to-consume latency: the outbox's own. */
    synchronized Percentiles commitToConsume() {
        return Percentiles.of(commitToConsume);
    }

    /** Due-to-consume latency: corrected for coordinated omission. */
    synchronized Percentiles dueToConsume() {
        return Percentiles.of(dueToConsume);
    }
}
