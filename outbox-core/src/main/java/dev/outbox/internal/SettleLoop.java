package dev.outbox.internal;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.PurgeListener;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * The settle thread ({@code <name>-purge}): takes the broker's completions, purges acknowledged rows in batches,
 * records the failure of failed ones for a retry of their key (or parks them), and only then lowers their keys'
 * barriers, so that the table and the schedule agree: a key's barrier is lowered only once its record's purge, park
 * or failure ({@code Store.retryLater}) committed.
 *
 * <h2>A store write refused for good</h2>
 * A write that fails retriably is retried with backoff until it succeeds ({@link StoreWrites}). One that the store
 * refuses with an error a retry cannot cure is narrowed down to the rows it keeps refusing, which are <em>held</em>:
 * their records stay in flight (their keys wait, their rows stay in the table), and this thread tries their writes
 * again with backoff between its other work, while every other key flows.
 *
 * <p>Runs on one thread; {@link #add} is called from any (the broker's callbacks).
 */
final class SettleLoop implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);

    private final String name;
    private final DispatcherConfig config;
    private final EngineRuntime runtime;
    private final Clock clock;
    /** The store's cursor harvest if its read waits for rows (a stream), else null. */
    private final CursorHarvest waitingReads;
    private final EngineState state;
    private final StoreWrites writes;
    private final Fences fences;
    private final EngineEvents events;
    private final WorkQueue<Completion> completions;
    /** The broker's {@link PurgeListener}, told of each committed purge; null if it has none. */
    private final PurgeListener purgeListener;
    /** Parked latest-only records, discarded once a newer record of their key is delivered. */
    private final SupersededParks supersededParks;
    /** Released when the dispatcher stops settling: cuts backoff waits short. */
    final Latch stopped;
    private volatile boolean stopping;

    /** Completions whose store write was refused for good, tried again when due. */
    private final List<Completion> held = new ArrayList<>();
    private long heldDueNanos;
    private final Backoff.Sequence heldBackoff;

    SettleLoop(String name, DispatcherConfig config, EngineRuntime runtime, Store store, EngineState state,
               StoreWrites writes, Fences fences, EngineEvents events, Backoff backoff, PurgeListener purgeListener) {
        this.name = name;
        this.config = config;
        this.runtime = runtime;
        this.clock = runtime.clock();
        this.waitingReads = store.capability(CursorHarvest.class).filter(CursorHarvest::readWaits).orElse(null);
        this.state = state;
        this.writes = writes;
        this.fences = fences;
        this.events = events;
        this.completions = new WorkQueue<>(runtime);
        this.stopped = new Latch(runtime);
        this.heldBackoff = backoff.sequence();
        this.purgeListener = purgeListener;
        this.supersededParks = new SupersededParks(name, runtime, store.capability(ParkedRecords.class).orElse(null),
                config.supersededParked(), events.callbacks);
    }

    /** A broker's answer, from any thread. */
    void add(Completion c) {
        completions.add(c);
    }

    /** Ends the loop after the batch under way; the caller interrupts and joins the thread. */
    void stop() {
        stopping = true;
        stopped.open();
    }

    @Override
    public void run() {
        List<Completion> batch = new ArrayList<>();
        long lastStuckScan = runtime.nanoTime();
        // A scan walks every key under the state's lock: a tenth of queueTimeout late is soon enough to report.
        long stuckScanNanos = Math.max(config.pollInterval().toNanos(), config.queueTimeout().toNanos() / 10);
        while (!stopping) {
            Completion first;
            try {
                first = completions.poll(config.pollInterval().toNanos());
            } catch (InterruptedException e) {
                if (stopping) {
                    return;
                }
                continue;
            }
            if (runtime.nanoTime() - lastStuckScan > stuckScanNanos) {
                reportStuckSends();
                lastStuckScan = runtime.nanoTime();
            }
            boolean wasHolding = !held.isEmpty();
            boolean retryHeld = wasHolding && runtime.nanoTime() - heldDueNanos >= 0;
            if (first == null && !retryHeld) {
                continue;
            }
            batch.clear();
            if (retryHeld) {
                batch.addAll(held); // their keys have nothing else in flight: no newer completion of theirs here
                held.clear();
            }
            if (first != null) {
                batch.add(first);
                completions.drainTo(batch, config.purgeBatchSize() - 1);
            }
            process(batch);
            if (held.isEmpty()) {
                heldBackoff.reset();
            } else if (retryHeld || !wasHolding) {
                heldDueNanos = runtime.nanoTime() + heldBackoff.next().toNanos();
            }
        }
    }

    /** The store writes a batch of completions asks for, and their verdicts. */
    private final class Batch {
        final List<Long> purgeIds = new ArrayList<>();
        final Map<Long, Instant> retryAt = new LinkedHashMap<>();
        final Map<Long, String> parkReasons = new LinkedHashMap<>();
        final List<ParkedRecord> parkedNow = new ArrayList<>();
        final Map<Flight, Verdict> verdicts = new HashMap<>();
        /** Sends refused by a fenced broker: no verdict, not counted; their rows are the successor's. */
        final Set<Long> fencedSendIds = new LinkedHashSet<>();
        DeliveryException brokerFence;
        Throwable lastDeliveryError;
        int failures;
        /** Rows whose write the store refused for good. */
        final Set<Long> refused = new LinkedHashSet<>();
        /** Rows whose write was refused as fenced: they leave flight without a verdict. */
        final Set<Long> fencedIds = new LinkedHashSet<>();
        StoreFencedException fence;
        String fencedOperation;
        int purged;

        /** Applies a write's outcome for {@code ids}. */
        void wrote(String operation, StoreWrites.Outcome o, java.util.Collection<Long> ids) {
            refused.addAll(o.refused());
            if (o.fenced() != null) {
                fence = o.fenced();
                fencedOperation = operation;
                fencedIds.addAll(ids);
            }
        }
    }

    private void process(List<Completion> completed) {
        Instant now = clock.instant();
        long nowNanos = runtime.nanoTime();
        Batch b = new Batch();
        supersededParks.term(state.terms());
        for (Completion c : completed) {
            judge(c, b, now);
        }
        if (b.lastDeliveryError != null) { // before the writes: a refused write is the failure health should show
            events.health.failed("send", EngineEvents.describe(b.lastDeliveryError), now);
        }
        b.fencedIds.addAll(b.fencedSendIds);
        List<Completion> settled = runtime.protocolOrder().settle(() -> writeVerdicts(b),
                () -> applyVerdicts(completed, b.verdicts, b.refused, b.fencedIds));
        Instant outageBegan = b.purgeIds.isEmpty() ? null : events.health.outageEnded();
        if (outageBegan != null) {
            log.info("{}: the broker is available again after an outage of {}", name,
                    Duration.between(outageBegan, now));
        }
        Set<String> stillRefused = new HashSet<>();
        for (Completion c : held) {
            stillRefused.add(c.refusedWrite());
        }
        for (String operation : List.of("purge", "retryLater", "park")) {
            if (!stillRefused.contains(operation) && writes.works(operation)) {
                log.info("{}: the store accepts {} again; the records it held were released", name, operation);
            }
        }
        int superseded = superseded(settled);
        events.acknowledged.addAndGet(b.purged - superseded);
        events.superseded.addAndGet(superseded);
        events.failed.addAndGet(b.failures);
        if (events.callbacks.observed()) {
            observeCompletions(settled, now, nowNanos);
        }
        for (ParkedRecord p : b.parkedNow) {
            if (!b.refused.contains(p.id())) {
                events.parked(p);
                supersededParks.parked(p);
            }
        }
        if (supersededParks.following()) {
            for (Completion c : settled) {
                if (c.error() == null && !c.flight().superseded()) {
                    supersededParks.delivered(c.flight().record());
                }
            }
        }
        if (b.fence != null) {
            fences.byStore(b.fencedOperation, b.fence);
        }
        if (b.brokerFence != null) {
            fences.byBroker(b.fencedSendIds.size(), b.brokerFence);
        }
    }

    /** The verdict for one completion: purge it, retry its key later, park it, or hold it through an outage. */
    private void judge(Completion c, Batch b, Instant now) {
        OutboxRecord r = c.flight().record();
        if (c.error() == null) {
            b.purgeIds.add(r.id());
            return;
        }
        Throwable cause = EngineEvents.unwrap(c.error());
        if (cause instanceof DeliveryException d && d.isFenced()) {
            b.brokerFence = d;
            b.fencedSendIds.add(r.id());
            return;
        }
        boolean permanent = cause instanceof DeliveryException d && d.isPermanent();
        boolean outage = cause instanceof DeliveryException d && d.isOutage();
        if (c.refusedWrite() == null) { // a held one was counted when it came in; only its verdict is recomputed
            b.lastDeliveryError = cause;
            b.failures++;
        }
        Verdict v;
        boolean outageBegins;
        state.lock.lock();
        try {
            outageBegins = outage && !state.schedule.inOutage();
            v = outage ? state.schedule.outage(c.flight()) : state.schedule.failure(c.flight(), permanent);
        } finally {
            state.lock.unlock();
        }
        b.verdicts.put(c.flight(), v);
        if (outageBegins) {
            boolean warn = events.health.outageBegan(now);
            log.atLevel(warn ? Level.WARN : Level.DEBUG).log("{}: the broker is unavailable ({}); every failing key is"
                    + " held and retried with a shared backoff for as long as it lasts; nothing is parked or counted"
                    + " during an outage", name, EngineEvents.describe(cause));
        }
        if (v.outage()) {
            log.debug("{}: delivery of record {} (key {}) failed in an outage; its key retries at {}", name, r.id(),
                    r.key(), v.nextAttemptAt(), cause);
        } else if (v.park()) {
            String reason = SupersededParks.reason(r, Excerpt.of((permanent ? "permanent failure: " : "failed "
                    + v.attempts() + " times, last: ") + EngineEvents.describe(cause), Excerpt.MAX_REASON_LENGTH));
            b.parkReasons.put(r.id(), reason);
            // The failure that parks it is recorded like every other (its retryLater runs before the park), so
            // the parked row counts the same attempts as the listener is told: every failed delivery.
            b.retryAt.put(r.id(), now);
            b.parkedNow.add(new ParkedRecord(r.id(), r.topic(), r.key(), v.attempts(), reason, now));
        } else {
            b.retryAt.put(r.id(), v.nextAttemptAt());
            log.debug("{}: delivery of record {} (key {}) failed (attempt {}); its key retries at {}", name, r.id(),
                    r.key(), v.attempts(), v.nextAttemptAt(), cause);
        }
    }

    /** Tells the broker's purge listener which acknowledged rows are gone from the table now. */
    private void purgedFromTable(List<Long> ids, StoreWrites.Outcome o) {
        if (purgeListener == null) {
            return;
        }
        List<Long> gone = new ArrayList<>(ids);
        gone.removeAll(o.refused());
        if (!gone.isEmpty()) {
            try {
                purgeListener.purged(gone);
            } catch (RuntimeException e) {
                log.warn("{}: the broker's purge listener failed", name, e);
            }
        }
    }

    /** Writes the batch's verdicts to the store: purges, retry times, parks; in that order. */
    private void writeVerdicts(Batch b) {
        if (!b.purgeIds.isEmpty()) {
            long purgeStart = runtime.nanoTime();
            Map<Long, Boolean> ids = new LinkedHashMap<>();
            b.purgeIds.forEach(id -> ids.put(id, Boolean.TRUE));
            StoreWrites.Outcome o = writes.write("purge", "purge", ids, m -> writes.writes().purge(m.keySet()),
                    stopped);
            b.wrote("purge", o, b.purgeIds);
            b.purged = o.fenced() != null ? 0 : b.purgeIds.size() - o.refused().size();
            if (!o.stopped() && b.purged > 0) {
                purgedFromTable(b.purgeIds, o);
                events.callbacks.purged(b.purged, Duration.ofNanos(runtime.nanoTime() - purgeStart)); // hook: purge
                events.health.purged(clock.instant());
            }
        }
        if (!b.retryAt.isEmpty()) {
            StoreWrites.Outcome o = writes.write("retryLater", "retryLater", b.retryAt,
                    m -> writes.writes().retryLater(m), stopped);
            b.wrote("retryLater", o, b.retryAt.keySet());
        }
        if (!b.parkReasons.isEmpty()) {
            StoreWrites.Outcome o = writes.write("park", "park", b.parkReasons, m -> writes.writes().park(m),
                    stopped);
            b.wrote("park", o, b.parkReasons.keySet());
            if (o.stopped() || o.fenced() != null) {
                b.parkedNow.clear();
            }
        }
    }

    /**
     * Lowers the barriers of the batch's keys, each as its verdict says: only once the store recorded every
     * verdict (purge, retry time or park), or the table and the schedule would disagree. A record whose write the
     * store {@code refused} for good is held instead: it stays in flight (its key waits) and goes to {@link #held}. A
     * record whose write was refused as {@code fenced} leaves flight without a verdict: its row is a successor's.
     *
     * @return the completions settled, in batch order
     */
    private List<Completion> applyVerdicts(List<Completion> batch,
                                           Map<Flight, Verdict> verdicts, Set<Long> refused,
                                           Set<Long> fenced) {
        List<Completion> settled = refused.isEmpty() && fenced.isEmpty() ? batch : new ArrayList<>(batch.size());
        KeySchedule schedule = state.schedule;
        state.lock.lock();
        try {
            for (Completion c : batch) {
                Verdict v = verdicts.get(c.flight());
                if (fenced.contains(c.flight().record().id())) {
                    schedule.unsent(c.flight()); // a deposed leader's record: the successor reads its row again
                    continue;
                }
                if (refused.contains(c.flight().record().id())) {
                    // Stays in flight: its row stays in the table and its key waits until the write succeeds.
                    held.add(new Completion(c.flight(), c.error(), c.at(),
                            v == null ? "purge" : v.park() ? "park" : "retryLater"));
                    continue;
                }
                if (settled != batch) {
                    settled.add(c);
                }
                if (v == null) {
                    schedule.acknowledged(c.flight());
                    if (c.flight().superseded()) {
                        state.skipped.parked(c.flight().record()); // a deliberate skip, as a MOVE_ON park is
                    } else {
                        state.skipped.acknowledged(c.flight().record());
                    }
                } else if (v.outage()) {
                    schedule.heldByOutage(c.flight(), v.nextAttemptAt());
                } else if (v.park()) {
                    schedule.parked(c.flight());
                    if (!schedule.isHeld(c.flight().record().key())) {
                        state.skipped.parked(c.flight().record()); // MOVE_ON: the key's next record says so
                    }
                } else {
                    schedule.retryLater(c.flight(), v.nextAttemptAt());
                }
            }
            state.settled(held.size());
        } finally {
            state.lock.unlock();
        }
        if (!settled.isEmpty() && waitingReads != null) {
            // Keys moved on: their next records must not wait for the end of a read that waits for new rows (the
            // harvest thread sends only between reads). Outside the lock: the store's wait has its own.
            waitingReads.wakeRead();
        }
        return settled;
    }

    /** The superseded records among those settled (purged without a send), logged at DEBUG. */
    private int superseded(List<Completion> settled) {
        int n = 0;
        for (Completion c : settled) {
            if (c.error() == null && c.flight().superseded()) {
                n++;
                log.debug("{}: record {} (topic {}, key {}) not sent: latest only, superseded by record {}", name,
                        c.flight().record().id(), c.flight().record().topic(), Excerpt.of(c.flight().record().key()),
                        c.flight().supersededBy());
            }
        }
        return n;
    }

    /** Hooks: acknowledged and failed deliveries, once their rows were purged, retried or parked. */
    private void observeCompletions(List<Completion> batch, Instant now, long nowNanos) {
        for (Completion c : batch) {
            OutboxRecord r = c.flight().record();
            if (c.error() == null && c.flight().superseded()) {
                events.callbacks.superseded(r, c.flight().supersededBy());
            } else if (c.error() == null) {
                Duration sendToAck = Duration.ofNanos(Math.max(0, c.at() - c.flight().sentAtNanos()));
                Instant acked = now.minusNanos(Math.max(0, nowNanos - c.at()));
                Instant created = r.createdAt();
                Duration commitToAck = created == null || !acked.isAfter(created) ? Duration.ZERO
                        : Duration.between(created, acked);
                events.callbacks.acknowledged(r, sendToAck, commitToAck);
            } else {
                events.callbacks.failed(r, EngineEvents.unwrap(c.error()));
            }
        }
    }

    /** Reports, once each, the records the broker has not answered for longer than {@code queueTimeout}. */
    private void reportStuckSends() {
        List<Flight> stuck = new ArrayList<>();
        long limit = runtime.nanoTime() - config.queueTimeout().toNanos();
        state.lock.lock();
        try {
            for (Flight f : state.schedule.flights()) {
                if (!f.reportedStuck() && f.sentAtNanos() - limit < 0) {
                    f.markReportedStuck();
                    stuck.add(f);
                }
            }
        } finally {
            state.lock.unlock();
        }
        if (stuck.isEmpty()) {
            return;
        }
        // One line for all the records found stuck together (a broker outage holds every record in flight), each
        // still reported to the listener.
        OutboxRecord first = stuck.get(0).record();
        log.warn("{}: {} record(s) unacknowledged after {}; their keys wait for the broker (the first: record {},"
                + " key {})", name, stuck.size(), config.queueTimeout(), first.id(), Excerpt.of(first.key()));
        for (Flight f : stuck) {
            events.failure("send", new TimeoutException("record " + f.record().id() + " (key "
                    + Excerpt.of(f.record().key()) + ") unacknowledged after " + config.queueTimeout()
                    + "; its key waits for the broker"));
        }
    }
}
