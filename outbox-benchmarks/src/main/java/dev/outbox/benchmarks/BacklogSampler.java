package dev.outbox.benchmarks;

import dev.outbox.spi.Gauges;
import dev.outbox.spi.Store;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/** Samples the backlog (rows in the outbox) every 250 ms while the writers run. */
final class BacklogSampler implements Runnable {
    private final Store store;
    private final long start;
    private final long warmNanos;
    private final List<long[]> samples = new ArrayList<>(); // {nanos since start, rows}
    private volatile boolean stop;
    private Thread thread;

    BacklogSampler(Store store, long start, long warmNanos) {
        this.store = store;
        this.start = start;
        this.warmNanos = warmNanos;
    }

    void start() {
        thread = new Thread(this, "bench-backlog");
        thread.setDaemon(true);
        thread.start();
    }

    void stop() throws InterruptedException {
        stop = true;
        thread.join(10_000);
    }

    @Override
    public void run() {
        while (!stop) {
            long rows = dev.outbox.spi.Store.require(store, dev.outbox.spi.Gauges.class, "the benchmark").backlog();
            synchronized (samples) {
                samples.add(new long[] {System.nanoTime() - start, rows});
            }
            LockSupport.parkNanos(250_000_000L);
        }
    }

    private List<long[]> measured() {
        List<long[]> out = new ArrayList<>();
        synchronized (samples) {
            for (long[] s : samples) {
                if (s[0] >= warmNanos) {
                    out.add(s);
                }
            }
        }
        return out;
    }

    long max() {
        return measured().stream().mapToLong(s -> s[1]).max().orElse(0);
    }

    long last() {
        List<long[]> m = measured();
        return m.isEmpty() ? 0 : m.get(m.size() - 1)[1];
    }

    /** Least-squares growth of the backlog over the measured window, in rows per second. */
    double slope() {
        List<long[]> m = measured();
        int n = m.size();
        if (n < 2) {
            return 0;
        }
        double sx = 0;
        double sy = 0;
        for (long[] s : m) {
            sx += s[0] / 1e9;
            sy += s[1];
        }
        double mx = sx / n;
        double my = sy / n;
        double num = 0;
        double den = 0;
        for (long[] s : m) {
            double dx = s[0] / 1e9 - mx;
            num += dx * (s[1] - my);
            den += dx * dx;
        }
        return den == 0 ? 0 : num / den;
    }
}
