package dev.outbox.internal;

import dev.outbox.OutboxSample;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.Store;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Samples the outbox — backlog, parked rows, creation time of its head and its age by the database's clock — every {@code interval} while the
 * dispatcher leads, on a thread of its own ({@code <name>-sample}): the store queries never delay a heartbeat
 * or a mark, and only the leader queries (a standby would only add load to read the same figures). Not
 * thread-safe: {@link #run()} is the body of one thread, {@link #stop()} may be called from any.
 */
final class OutboxSampler implements Runnable {
    /** The store's gauges, or null if it has none (every figure is then 0). */
    private final Gauges gauges;
    private final Clock clock;
    private final Latch stopped;
    private final Duration interval;
    private final BooleanSupplier leading;
    private final Consumer<OutboxSample> onSample;
    private final Consumer<RuntimeException> onFailure;

    OutboxSampler(EngineRuntime runtime, Store store, Duration interval, BooleanSupplier leading,
                  Consumer<OutboxSample> onSample, Consumer<RuntimeException> onFailure) {
        this.gauges = store.capability(Gauges.class).orElse(null);
        this.clock = runtime.clock();
        this.stopped = new Latch(runtime);
        this.interval = interval;
        this.leading = leading;
        this.onSample = onSample;
        this.onFailure = onFailure;
    }

    @Override
    public void run() {
        try {
            while (!stopped.await(interval.toNanos())) {
                if (leading.getAsBoolean()) {
                    sampleOnce();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Takes one sample now and hands it on; a failed query is handed to the failure callback. */
    void sampleOnce() {
        OutboxSample sample;
        try {
            Instant oldest = gauges == null ? null : gauges.oldestCreateTime().orElse(null);
            Duration age = gauges == null || oldest == null ? null : gauges.oldestAge().orElse(null);
            long backlog = gauges == null ? 0 : gauges.backlog();
            long parked = gauges == null ? 0 : gauges.parkedCount();
            long retained = gauges == null ? -1 : gauges.retainedBytes().orElse(-1);
            sample = new OutboxSample(clock.instant(), Math.max(0, backlog), Math.max(0, parked), oldest,
                    Math.max(-1, retained), age == null || age.isNegative() ? null : age);
        } catch (RuntimeException e) {
            onFailure.accept(e);
            return;
        }
        onSample.accept(sample);
    }

    void stop() {
        stopped.open();
    }
}
