package dev.outbox.internal;

import dev.outbox.spi.Backoff;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.spi.StoreFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The leader's writes to the store and how they are retried: the store as this leader writes to it (fenced by the
 * database epoch it took, with a fencing store), and batched writes that are retried with backoff while they fail
 * retriably and narrowed down by halving when the store refuses them for good, so that only the rows it keeps
 * refusing are held.
 *
 * <p>Thread-safe: the harvest thread takes the epoch and parks unreadable rows, the settle thread purges, records
 * failures and parks.
 */
final class StoreWrites {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    private final Store store;
    private final Backoff backoff;
    private final Duration maxBackoff;
    private final EngineEvents events;
    /** The store's fencing of deposed leaders, or null if it has none. */
    private final StorageFencing fencer;
    /** Whether the store fences deposed leaders ({@link StorageFencing}). */
    final boolean fencing;
    /** The store as this leader writes to it: fenced by its epoch once taken, else the store itself. */
    private volatile Store writes;
    /** The mark of {@link #writes}, or null if the store does not mark. */
    private volatile MarkHarvest marks;
    /** The epoch {@link #writes} is fenced by, or 0. */
    private volatile long takenEpoch;
    /** Store writes refused for good and not yet done since: each refusal is reported once. */
    private final Set<String> refusing = ConcurrentHashMap.newKeySet();

    /** The log lines of each failing operation, bounded through an outage. */
    private final Map<String, OutageLog> outages = new ConcurrentHashMap<>();
    private final EngineRuntime runtime;

    StoreWrites(String name, Store store, Backoff backoff, Duration maxBackoff, EngineEvents events,
                EngineRuntime runtime) {
        this.runtime = runtime;
        this.name = name;
        this.store = store;
        this.backoff = backoff;
        this.maxBackoff = maxBackoff;
        this.events = events;
        this.fencer = store.capability(StorageFencing.class).orElse(null);
        this.fencing = fencer != null;
        this.writes = store;
        this.marks = store.capability(MarkHarvest.class).orElse(null);
    }

    /** The store as this leader writes to it. */
    Store writes() {
        return writes;
    }

    /** The mark harvest as this leader marks: fenced like {@link #writes()}; null if the store does not mark. */
    MarkHarvest marks() {
        return marks;
    }

    /** The database epoch this leader's writes are fenced by, or 0. */
    long takenEpoch() {
        return takenEpoch;
    }

    /**
     * Takes the outbox's leader epoch in the database ({@link StorageFencing#acquireEpoch()}): from now on this leader's
     * writes are fenced by it. The caller holds the send lock (see {@link HarvestLoop}).
     *
     * @return the epoch taken
     */
    long takeEpoch() {
        long taken = fencer.acquireEpoch();
        Store fenced = fencer.fencedBy(taken);
        takenEpoch = taken;
        marks = fenced.capability(MarkHarvest.class).orElse(null);
        writes = fenced;
        log.info("{}: took leader epoch {} in the database: writes of earlier leaders are refused from now on", name,
                taken);
        return taken;
    }

    /** Forgets that {@code episode} was refused; returns whether it had been. */
    boolean works(String episode) {
        return refusing.remove(episode);
    }

    /**
     * What became of a batched store write: the ids the store refused for good (narrowed down by halving), whether it
     * gave up because the dispatcher is closing (the rows stay for the next leader), and the refusal as fenced, if
     * the store refused it so.
     */
    record Outcome(Set<Long> refused, boolean stopped, StoreFencedException fenced) {
        static Outcome done(Set<Long> refused) {
            return new Outcome(refused, false, null);
        }
    }

    /**
     * Runs a batched store write over {@code items} with {@link #retryUntilDone}: retriable failures are retried
     * until they succeed. A batch the store refuses for good is split in halves, each tried on its own (the store
     * applies each call to all of its rows or none), down to the single rows it keeps refusing, which are
     * returned. The first refusal of {@code episode} is reported (ERROR, listener, health); later ones, until
     * {@link #works} ends the episode, only at DEBUG. A refusal of every row costs about twice as many statements as
     * rows, each failing fast.
     */
    <V> Outcome write(String operation, String episode, Map<Long, V> items, Consumer<Map<Long, V>> call, Latch stop) {
        Set<Long> refused = new LinkedHashSet<>();
        RuntimeException refusal = null;
        ArrayDeque<Map<Long, V>> parts = new ArrayDeque<>();
        parts.push(items);
        while (!parts.isEmpty()) {
            Map<Long, V> part = parts.pop();
            RuntimeException[] error = new RuntimeException[1];
            if (!retryUntilDone(operation, () -> call.accept(part), stop, error)) {
                if (error[0] == null) {
                    return new Outcome(Set.of(), true, null);
                }
                if (error[0] instanceof StoreFencedException fenced) {
                    return new Outcome(Set.of(), false, fenced); // not narrowed down: every row is refused
                }
                refusal = refusal == null ? error[0] : refusal;
                if (part.size() == 1) {
                    refused.addAll(part.keySet());
                } else {
                    Map<Long, V> first = new LinkedHashMap<>();
                    Map<Long, V> second = new LinkedHashMap<>();
                    for (Map.Entry<Long, V> e : part.entrySet()) {
                        (first.size() < part.size() / 2 ? first : second).put(e.getKey(), e.getValue());
                    }
                    parts.push(second);
                    parts.push(first);
                }
            }
        }
        if (refusal != null) {
            if (refusing.add(episode)) {
                log.error("{}: the store refused to {} {} of {} row(s) with an error a retry cannot cure; holding those"
                        + " rows (they stay in the table, their keys wait) and trying again with backoff up to {},"
                        + " while other keys go on. Reported once until it works: {}", name, operation,
                        refused.size(), items.size(), maxBackoff, refused, refusal);
                events.failure(operation, refusal);
            } else {
                log.debug("{}: the store still refuses to {} rows {}: {}", name, operation, refused,
                        EngineEvents.describe(refusal));
            }
        }
        return Outcome.done(refused);
    }

    /** Whether a retry of a failed store call may help: anything but a {@link StoreException} saying it cannot. */
    private static boolean isRetriable(RuntimeException e) {
        return !(e instanceof StoreException s) || s.isRetriable();
    }

    /**
     * Runs a store call until it succeeds, backing off exponentially. Gives up when {@code stop} is released
     * (closing), leaving the rows for the next leader, which is safe: nothing is lost, at worst re-sent; and at
     * once, without a retry, when the store refuses the call for good ({@link StoreException#isRetriable()}
     * false), putting the error in {@code refusal[0]}.
     *
     * @return whether the call succeeded
     */
    private OutageLog outage(String operation) {
        return outages.computeIfAbsent(operation, o -> new OutageLog(log, name, o, runtime));
    }

    private boolean retryUntilDone(String operation, Runnable call, Latch stop, RuntimeException[] refusal) {
        Backoff.Sequence waits = backoff.sequence();
        while (true) {
            try {
                call.run();
                outage(operation).succeeded();
                return true;
            } catch (RuntimeException e) {
                if (!isRetriable(e)) {
                    refusal[0] = e;
                    return false;
                }
                if (stop.isOpen()) {
                    log.warn("{}: {} failed while closing; rows stay for the next leader", name, operation, e);
                    return false;
                }
                Duration wait = waits.next();
                outage(operation).failed(wait, e);
                events.failure(operation, e);
                try {
                    if (stop.await(wait.toNanos())) {
                        return false;
                    }
                } catch (InterruptedException ie) {
                    if (stop.isOpen()) {
                        return false;
                    }
                }
            }
        }
    }
}
