package dev.outbox.internal;

import dev.outbox.DispatcherListener;
import dev.outbox.MeterReading;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.StoreException;
import dev.outbox.spi.StoreFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntSupplier;

/**
 * What the engine tells the world about what happened: the listener and observers ({@link Callbacks}), the figures
 * of {@link EngineHealth}, the counters behind the meter readings, and the log lines of failures and parks. The
 * engine's rooms report here at the point an event happens; none of them decides anything from it.
 *
 * <p>Thread-safe.
 */
final class EngineEvents {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);
    /**
     * The store calls whose failure means the store cannot be reached: the harvest's reads, the epoch increment, and
     * the settle thread's writes (a leader whose in-flight window is full of records whose purge fails reads nothing,
     * and must not look healthy for that).
     */
    private static final Set<String> STORE_CALLS = Set.of("read", "mark", "fence", "purge", "retryLater", "park");

    final String name;
    final Callbacks callbacks;
    final EngineHealth health;
    private final Clock clock;
    private final boolean holdKeys;

    final AtomicLong sent = new AtomicLong();
    final AtomicLong acknowledged = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong parked = new AtomicLong();
    /** Latest-only records purged without a send: a newer record of their topic and key was queued. */
    final AtomicLong superseded = new AtomicLong();

    EngineEvents(String name, DispatcherListener listener, Clock clock, boolean holdKeys) {
        this.name = name;
        this.callbacks = new Callbacks(name, listener);
        this.clock = clock;
        this.holdKeys = holdKeys;
        this.health = new EngineHealth(clock);
    }

    /**
     * Remembers a failed operation for health and tells the listener. A store error of a store call (the harvest's
     * reads, the epoch increment, the settle thread's writes) marks the store unreachable until a read succeeds.
     */
    void failure(String operation, Throwable e) {
        Instant at = clock.instant();
        health.failed(operation, describe(e), at);
        if (STORE_CALLS.contains(operation) && unwrap(e) instanceof StoreException
                && !(unwrap(e) instanceof StoreFencedException)) {
            health.readFailed(at);
        }
        listener("failure", l -> l.failure(operation, e));
    }

    /** A record was parked: counted, logged at ERROR, told to the listener and the observers. */
    void parked(ParkedRecord p) {
        parked.incrementAndGet();
        log.error("{}: parked record {} (topic {}, key {}): {}{}", name, p.id(), p.topic(), Excerpt.of(p.key()),
                p.reason(), holdKeys ? "; its key is held (afterPark HOLD_KEY) until the parked row is replayed or"
                        + " discarded" : "");
        listener("recordParked", l -> l.recordParked(p));
        callbacks.parked(p); // hook: park
    }

    void listener(String kind, Consumer<DispatcherListener> event) {
        callbacks.listener(kind, event);
    }

    /** The meter readings: the counters' movement since the last reading, every {@code metricsInterval}. */
    final class Meter {
        private final long[] last = new long[4];
        private long lastSuperseded;
        private Instant lastAt = clock.instant();

        /** Emits a reading if {@code interval} passed since the last one, or {@code always}. */
        void tick(Duration interval, boolean always, IntSupplier inFlight) {
            Instant now = clock.instant();
            if (!always && Duration.between(lastAt, now).compareTo(interval) < 0) {
                return;
            }
            long[] counts = {sent.get(), acknowledged.get(), failed.get(), parked.get()};
            MeterReading reading = new MeterReading(now, Duration.between(lastAt, now), counts[0] - last[0],
                    counts[1] - last[1], counts[2] - last[2], counts[3] - last[3], inFlight.getAsInt(), counts[1]);
            System.arraycopy(counts, 0, last, 0, 4);
            long superseded = EngineEvents.this.superseded.get();
            if (superseded != lastSuperseded) {
                log.info("{}: {} latest-only record(s) superseded in the last {}: purged without a send, a newer"
                        + " record of their topic and key behind them ({} since the start)", name,
                        superseded - lastSuperseded, reading.window(), superseded);
                lastSuperseded = superseded;
            }
            lastAt = now;
            listener("meterRead", l -> l.meterRead(reading));
        }
    }

    static Throwable unwrap(Throwable e) {
        while (e instanceof CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
