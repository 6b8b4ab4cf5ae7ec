package dev.outbox.examples;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Measures commit-to-consume latency inside one process: writers note when they commit an order, the consumer
 * notes when its event first arrives. Both use {@link System#nanoTime()}, which is why the demo's consumer runs in
 * the same JVM. Thread-safe.
 */
final class LatencyClock {
    private final Map<Long, Long> committing = new ConcurrentHashMap<>();
    private long[] samples = new long[1024];
    private int size;

    /** The order is about to be committed. */
    void committing(long orderId) {
        committing.put(orderId, System.nanoTime());
    }

    /** The order's transaction was rolled back (or never got an id). */
    void forget(long orderId) {
        committing.remove(orderId);
    }

    /** The order's event arrived for the first time; records its latency. */
    void consumed(long orderId) {
        Long start = committing.remove(orderId);
        if (start != null) {
            add(System.nanoTime() - start);
        }
    }

    private synchronized void add(long nanos) {
        if (size == samples.length) {
            samples = Arrays.copyOf(samples, size * 2);
        }
        samples[size++] = nanos;
    }

    /** The {@code p}-th percentile (0–100) in milliseconds, or -1 if nothing was measured. */
    synchronized double percentileMillis(double p) {
        if (size == 0) {
            return -1;
        }
        long[] sorted = Arrays.copyOf(samples, size);
        Arrays.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * size) - 1;
        return sorted[Math.max(0, Math.min(size - 1, index))] / 1e6;
    }

    synchronized int samples() {
        return size;
    }
}
