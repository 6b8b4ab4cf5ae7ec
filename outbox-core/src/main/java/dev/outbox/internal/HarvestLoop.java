package dev.outbox.internal;

import dev.outbox.DispatcherConfig;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The harvest thread ({@code <name>-mark}): while leading, reads rows ({@link HarvestSource}) and sends them
 * ({@link Sender}), subject to the global in-flight throttle and the per-key barrier of the {@link KeySchedule}.
 * Each turn it asks {@link HarvestDecision} what to do, from figures read under the state's lock, and carries the
 * step out: the decision is pure, the waits and the I/O are here.
 *
 * <h2>Storage fencing</h2>
 * With a store that fences, the epoch is taken in the database once per leadership, before the first read or mark,
 * and every store write of the leader goes through the store fenced by it ({@link StoreWrites}). After a write was
 * refused as fenced ({@link Fences}), this thread stands down — neither reads nor sends — for a backoff; then, if
 * the election still says this instance leads with a valid lease, it takes a new epoch and carries on. A deposed
 * leader's election soon says otherwise; and a successor fenced by an ex-leader that briefly believed it led again
 * wins the epoch back instead of stalling.
 */
final class HarvestLoop implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);
    /** With {@code HOLD_KEY}: how often a leader reads the store's parked keys to learn of replays and discards. */
    static final Duration HOLD_CHECK_INTERVAL = Duration.ofSeconds(1);
    /**
     * The longest {@link #awaitSentSettled} waits, whatever {@code markBackoff} says: long enough for a broker's
     * acknowledgement, short enough that commits it does not wake for are not held back when acknowledgements are
     * slow (an outage, a broker far away).
     */
    private static final Duration SETTLED_WAIT_MAX = Duration.ofMillis(10);

    private final String name;
    private final DispatcherConfig config;
    private final EngineRuntime runtime;
    /** The log lines of failing attempts to take the epoch, bounded through an outage. */
    private final OutageLog epochOutage;
    private final Clock clock;
    private final Store store;
    private final MessageBroker broker;
    private final EngineState state;
    private final StoreWrites writes;
    private final EngineEvents events;
    private final Sender sender;
    private final CommitWakeups wakeups;
    private final HarvestSource source;
    private final Supplier<UUID> ids;
    private final BooleanSupplier leaseValid;
    private final Backoff ioBackoff;
    private final boolean holdKeys;
    /** Released when the dispatcher stops harvesting: cuts backoff waits short. */
    final Latch stopped;
    private volatile boolean stopping;
    /** Set by {@link #stop()}: close lets go of the store's harvest itself, after the last purge. */
    private volatile boolean closing;

    private final HarvestDecision.Progress progress = new HarvestDecision.Progress();

    HarvestLoop(String name, DispatcherConfig config, EngineRuntime runtime, Store store, MessageBroker broker,
                EngineState state, StoreWrites writes, EngineEvents events, Sender sender, Latch stopped,
                Supplier<UUID> ids, BooleanSupplier leaseValid, Backoff ioBackoff, Fences fences) {
        this.name = name;
        this.config = config;
        this.runtime = runtime;
        this.epochOutage = new OutageLog(log, name, "taking the outbox's leader epoch in the database", runtime);
        this.clock = runtime.clock();
        this.store = store;
        this.broker = broker;
        this.state = state;
        this.writes = writes;
        this.events = events;
        this.sender = sender;
        this.stopped = stopped;
        this.ids = ids;
        this.leaseValid = leaseValid;
        this.ioBackoff = ioBackoff;
        this.holdKeys = config.afterPark() == DispatcherConfig.AfterPark.HOLD_KEY;
        this.wakeups = new CommitWakeups(name, store, state, config.pollInterval());
        HarvestSource.Parts parts = new HarvestSource.Parts(name, runtime, store, state, writes, fences, events,
                holdKeys, stopped, this::pause);
        this.source = state.cursor != null ? new CursorSource(parts, config.rescanInterval()) : new MarkSource(parts);
    }

    /** Ends the loop after its step under way; the caller joins the thread. */
    void stop() {
        closing = true;
        stopping = true;
        stopped.open();
        state.signalWork();
    }

    /** Rows were put into the outbox by this instance (due scheduled messages): an idle pause ends. Any thread. */
    void rowsAdded() {
        wakeups.signal();
    }

    /** Closes the store's harvest: close calls it once the last acknowledgements were purged. */
    void stopStoreHarvest() {
        wakeups.stop();
    }

    @Override
    public void run() {
        Backoff.Sequence readFailures = ioBackoff.sequence();
        // An idle outbox is read again after markBackoff, doubling up to pollInterval while reads find nothing.
        Backoff.Sequence idle = Backoff.exponential(config.markBackoff(), config.pollInterval()).sequence();
        Backoff.Sequence fencedBackoff = ioBackoff.sequence();
        HarvestDecision.Progress p = progress;
        try {
            while (!stopping) {
                Turn t = nextTurn();
                switch (t.decision.step()) {
                    case AWAIT_DRAIN, AWAIT_LEADERSHIP, THROTTLED -> {
                        // awaited under the lock already
                    }
                    case STOP_HARVEST -> {
                        wakeups.stop();
                        p.harvestEpoch = -1;
                    }
                    case BROKER_STAND_DOWN -> {
                        if (p.brokerStoodDownFor != t.leadership) {
                            fencedBackoff.reset(); // a new leadership
                            p.brokerStoodDownFor = t.leadership;
                        }
                        if (!pause(fencedBackoff.next())) {
                            state.epochRegained(); // the broker is asked again at the next send (Kafka: initTransactions)
                        }
                    }
                    case TAKE_EPOCH -> takeEpoch(t, fencedBackoff, readFailures);
                    case READ_HOLDS -> {
                        if (readHeldKeys(t.leadership, t.holdsStarted, p.holdsReadFor == t.leadership,
                                readFailures)) {
                            p.holdsReadFor = t.leadership;
                        }
                        p.lastHoldsRead = runtime.nanoTime();
                    }
                    case SEND -> {
                        sender.send(t.toSend, t.markEpoch);
                        if (t.brokerIdle && !p.lastReadFull) {
                            // Caught up, and nothing else in flight: nothing will fill the broker's batch soon. With
                            // records in flight, a lingering batch fills while they complete (a busy outbox batches).
                            broker.sendPending();
                            if (!source.waits()) {
                                awaitSentSettled();
                            }
                        }
                    }
                    case READ -> read(t, readFailures, idle);
                }
            }
        } finally {
            if (p.harvesting() && !closing) {
                wakeups.stop(); // on close, close() does it once the acknowledgements in flight were purged
            }
        }
    }

    /** What one turn decided, with the figures it carries out the step with. */
    private record Turn(HarvestDecision.Decision decision, UUID markAs, long markEpoch, long leadership, int room,
                        List<Flight> toSend, boolean brokerIdle, long holdsStarted) {
    }

    /** Decides under the lock, and does there what must happen under it: a refresh, a wait, taking ready records. */
    private Turn nextTurn() {
        HarvestDecision.Progress p = progress;
        Leadership l = state.leadership;
        KeySchedule schedule = state.schedule;
        state.lock.lock();
        try {
            if (l.leading() && l.remarkNeeded()) {
                refresh();
            }
            long now = runtime.nanoTime();
            boolean ended = p.harvesting() && (!l.leading() || l.epoch() != p.harvestEpoch);
            if (ended && p.harvestEndedAt == Long.MIN_VALUE) {
                p.harvestEndedAt = now;
            }
            HarvestDecision.Inputs in = new HarvestDecision.Inputs(l.leading(), leaseValid.getAsBoolean(), l.epoch(),
                    l.leaderships(), l.epochLost(), l.brokerFencedNow(), state.underway(), schedule.hasReady(),
                    schedule.room(), schedule.readThreshold(config.harvest() == DispatcherConfig.Harvest.CURSOR
                            ? config.readBatchSize() : config.markBatchSize()), writes.fencing, holdKeys, p,
                    ended && now - p.harvestEndedAt >= config.drainTimeout().toNanos(),
                    now - p.lastHoldsRead >= HOLD_CHECK_INTERVAL.toNanos());
            HarvestDecision.Decision d = HarvestDecision.decide(in);
            if (d.clearStaleLoss()) {
                l.regained();
            }
            boolean brokerIdle = schedule.inFlight() == 0;
            List<Flight> toSend = List.of();
            switch (d.step()) {
                case AWAIT_DRAIN, AWAIT_LEADERSHIP -> awaitWork(config.pollInterval());
                case STOP_HARVEST -> p.harvestEndedAt = Long.MIN_VALUE;
                case SEND -> toSend = schedule.takeReady(Integer.MAX_VALUE, runtime.nanoTime());
                case THROTTLED -> {
                    // Throttled (records or bytes): wait until acknowledgements make room for a read, or a retry
                    // falls due.
                    if (!stopping) {
                        awaitWork(untilDue(config.pollInterval()));
                    }
                }
                default -> {
                }
            }
            return new Turn(d, l.leaderId(), l.epoch(), l.leaderships(), in.room(), toSend, brokerIdle,
                    schedule.parkedKeysReadStarted());
        } finally {
            state.lock.unlock();
        }
    }

    /** One read or mark, and the idle backoff or commit wake-up after it. */
    private void read(Turn t, Backoff.Sequence readFailures, Backoff.Sequence idle) {
        HarvestDecision.Progress p = progress;
        if (!p.harvesting()) {
            wakeups.start();
        }
        p.harvestEpoch = t.markEpoch;
        long signalsBefore = wakeups.seen();
        int read = source.harvest(t.markAs, t.room, config.markBatchSize(), t.markEpoch, readFailures);
        if (read < 0) {
            return; // failed; backed off already
        }
        p.lastReadFull = source.lastFull();
        if (read == 0 && source.waits()) {
            idle.reset(); // the read waited for rows already: read again at once
        } else if (read == 0) {
            wakeups.needed(true);
            pauseUnlessCommitted(idle.next(), signalsBefore);
        } else {
            idle.reset();
            wakeups.needed(false); // busy: it reads again at once, wake-ups would be wasted
        }
        if (read < t.room) {
            source.caughtUp(runtime.nanoTime());
        }
    }

    /** Caller holds the lock. Takes a fresh leader id: every unacknowledged row will be marked again. */
    private void refresh() {
        UUID fresh = ids.get();
        state.refreshed(fresh);
        log.info("{}: leader refreshed, leader id {}", name, fresh);
        events.health.leading(fresh);
        events.listener("leaderRefreshed", l -> l.leaderRefreshed(fresh));
    }

    /**
     * Takes the outbox's leader epoch in a fencing store, after a stand-down if it was lost in this leadership, if
     * this instance still holds that leadership: from now on this leader's writes are fenced by it.
     */
    private void takeEpoch(Turn t, Backoff.Sequence fencedBackoff, Backoff.Sequence failures) {
        HarvestDecision.Progress p = progress;
        if (p.epochTakenFor != t.leadership) {
            fencedBackoff.reset(); // a new leadership
        }
        if (t.decision.standDown() && (pause(fencedBackoff.next()) || !leaseValid.getAsBoolean())) {
            return; // leadership changed, closing, or the lease lapsed meanwhile
        }
        boolean taken;
        try {
            taken = sender.whileLeading(t.leadership, () -> !stopping, writes::takeEpoch);
            failures.reset();
            epochOutage.succeeded();
        } catch (RuntimeException e) {
            Duration wait = failures.next();
            epochOutage.failed(wait, e);
            events.failure("fence", e);
            pause(wait);
            return;
        }
        if (taken) {
            p.epochTakenFor = t.leadership;
            state.epochRegained();
        }
    }

    /**
     * {@code HOLD_KEY}: reads the store's parked keys and holds them; a held key no longer among them (its parked rows
     * were replayed or discarded) is released, and the harvest rewinds to read its records again from the head of
     * the table, where a replay put the replayed rows ahead of the key's waiting ones.
     *
     * @param loaded whether the keys were read already in this leadership; until they were, nothing is read or sent
     * @return whether they were read and applied
     */
    private boolean readHeldKeys(long leadership, long started, boolean loaded, Backoff.Sequence failures) {
        Set<String> parkedKeys;
        try {
            parkedKeys = Store.require(store, ParkedKeys.class, "afterPark HOLD_KEY").parkedKeys();
        } catch (RuntimeException e) {
            events.failure("parkedKeys", e);
            if (loaded) {
                log.warn("{}: reading the parked keys failed; the held keys stay held, reading again in {}", name,
                        HOLD_CHECK_INTERVAL, e);
            } else {
                Duration wait = failures.next();
                log.warn("{}: reading the parked keys failed; nothing is read or sent until the held keys are known;"
                        + " retrying in {}", name, wait, e);
                pause(wait);
            }
            return false;
        }
        Set<String> released;
        int heldNow;
        int heldBefore;
        state.lock.lock();
        try {
            if (state.leadership.leaderships() != leadership || !state.leadership.leading()) {
                return false; // a new leadership reads them again
            }
            heldBefore = state.schedule.heldKeys();
            released = state.schedule.parkedKeysRead(parkedKeys, started);
            heldNow = state.schedule.heldKeys();
            if (!released.isEmpty()) {
                state.released();
            }
        } finally {
            state.lock.unlock();
        }
        if (!released.isEmpty()) {
            log.info("{}: released {} held key(s) (their parked rows were replayed or discarded): {}; {} still held",
                    name, released.size(), sample(released), heldNow);
        }
        if (heldNow > heldBefore) {
            log.info("{}: {} key(s) held after a park (afterPark HOLD_KEY): their records wait until an operator"
                    + " replays or discards their parked rows", name, heldNow);
        }
        return true;
    }

    private static String sample(Set<String> keys) {
        List<String> some = keys.stream().sorted().limit(10).toList();
        return keys.size() > some.size() ? some + " and " + (keys.size() - some.size()) + " more" : some.toString();
    }

    // ------------------------------------------------------------------------------------------ waits

    /** Caller holds the lock. Waits for work at most {@code max}; an interrupt stops the loop. */
    private void awaitWork(Duration max) {
        if (!state.awaitWork(max)) {
            stopping = true;
        }
    }

    /** Caller holds the lock. {@code max}, or less if a key's retry falls due sooner. */
    private Duration untilDue(Duration max) {
        Instant due = state.schedule.nextDue();
        if (due == null) {
            return max;
        }
        Duration d = Duration.between(clock.instant(), due);
        return d.isNegative() ? Duration.ZERO : (d.plusMillis(1).compareTo(max) <= 0 ? d.plusMillis(1) : max);
    }

    /**
     * Waits {@code d} unless woken by a change of leadership, by closing, or because a key may be sent (its
     * retry fell due, or an acknowledgement lowered its barrier).
     *
     * @return whether it was cut short by a change of leadership or closing
     */
    private boolean pause(Duration d) {
        return pauseUnlessCommitted(d, -1);
    }

    /**
     * {@link #pause}, cut short too when the store signals a commit after {@code signalsSeen} (the count of commit
     * wake-ups read before the read that found nothing; -1: not watched).
     */
    private boolean pauseUnlessCommitted(Duration d, long signalsSeen) {
        long deadline = runtime.nanoTime() + d.toNanos();
        state.lock.lock();
        wakeups.idle(signalsSeen >= 0);
        try {
            long e0 = state.leadership.epoch();
            while (!stopping && state.leadership.epoch() == e0) {
                long left = deadline - runtime.nanoTime();
                if (left <= 0 || state.schedule.hasReady() || wakeups.arrivedSince(signalsSeen)) {
                    return false;
                }
                if (!state.awaitWorkNanos(Math.min(left, untilDue(d).toNanos()))) {
                    stopping = true;
                }
            }
            return true;
        } finally {
            wakeups.idle(false);
            state.lock.unlock();
        }
    }

    /**
     * After a caught-up send (nothing was in flight before it, and the read was not full): waits until what is in
     * flight has settled, a record is ready or {@code markBackoff} (at most {@link #SETTLED_WAIT_MAX}) has passed,
     * instead of reading again at once. The read right after a caught-up one almost always finds nothing, and it
     * would run beside the send on the same cores. Commits signalled meanwhile do not end the wait: they are read
     * together once the send has settled, and sent at once (nothing in flight then), where reading each as it comes
     * would send it behind the records in flight into a batch the producer holds for {@code linger.ms}.
     */
    private void awaitSentSettled() {
        long deadline = runtime.nanoTime() + Math.min(config.markBackoff().toNanos(), SETTLED_WAIT_MAX.toNanos());
        state.lock.lock();
        try {
            long e0 = state.leadership.epoch();
            while (!stopping && state.leadership.epoch() == e0 && state.schedule.inFlight() > 0
                    && !state.schedule.hasReady()) {
                long left = deadline - runtime.nanoTime();
                if (left <= 0) {
                    return;
                }
                if (!state.awaitWorkNanos(left)) {
                    stopping = true;
                }
            }
        } finally {
            state.lock.unlock();
        }
    }
}
