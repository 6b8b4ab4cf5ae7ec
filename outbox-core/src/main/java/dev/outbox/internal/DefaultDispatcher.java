package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.MeterReading;
import dev.outbox.OutboxException;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxSample;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.spi.StoreFencedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The harvest engine behind {@link Dispatcher}. Four threads:
 * <ul>
 *   <li>{@code <name>-leader} drives the leader transport and the {@link NeliStateMachine}, and emits meter
 *       reads;</li>
 *   <li>{@code <name>-mark} harvests while leading — reads rows by cursor ({@link DispatcherConfig.Harvest#CURSOR},
 *       the default) or marks them ({@link DispatcherConfig.Harvest#MARK}) — and sends them, subject to the global
 *       in-flight throttle and the per-key barrier;</li>
 *   <li>{@code <name>-purge} takes broker completions, purges acknowledged rows in batches, records the failure
 *       of failed ones for a retry of their key (or parks them), and only then lowers their keys' barriers;</li>
 *   <li>{@code <name>-sample} samples the outbox for the observers while leading ({@link OutboxSampler}).</li>
 * </ul>
 *
 * <h2>Two harvests, one loop</h2>
 * The cursor harvest reads committed rows above a cursor held in memory ({@link HarvestCursor}: the cursor, and
 * the ids it passed before they committed, rechecked until the store says they never will); the mark harvest
 * stamps the leader id on the oldest rows not marked with it. Either way the rows go to the same
 * {@link KeySchedule}, are sent, and are deleted once acknowledged; the cursor harvest writes nothing to a row on
 * the way. A failed read changes nothing and is simply retried; a failed mark may have committed, so it rewinds
 * (below).
 *
 * <h2>Observation</h2>
 * Listener and observer callbacks all go through {@link #callbacks}, which catches, counts and logs what they
 * throw. The hooks are one-liners at the points they measure: after a read or mark, after a purge committed, after
 * a send, when a completion is processed, when a record is parked; the figures {@link #health()} reports are
 * volatile fields written at the same points.
 *
 * <h2>Scheduling state</h2>
 * The per-key state (records read and queued behind their key, the barrier of one record in flight per key,
 * per-record retry times) lives in one {@link KeySchedule}, the harvest position in one {@link HarvestCursor}, both
 * guarded by {@link #lock}; their Javadoc states the invariants. This class only coordinates threads around them
 * and calls the store in the order that keeps the table and the schedule in agreement: a key's barrier is lowered
 * only once its record's purge, park or failure ({@code Store.retryLater}) committed.
 *
 * <h2>What holds one key, what rewinds everything</h2>
 * A failed delivery holds only its key: the record's attempt count and next attempt time are written to its row,
 * the record goes back to the head of its key, and every other key keeps flowing. Some things still rewind
 * globally, because after them the schedule may no longer describe the table: a failed mark (a lost connection:
 * the mark may have committed rows this leader never saw), a lapsed lease before a send, and any change of
 * leadership (fenced, revoked, acquired). After them the leader takes a fresh leader id (or stops), abandons
 * every queued record and reads or marks again from the head of the table; records in flight are not queued again
 * while their delivery is under way, and the rows' attempts and next attempt times carry every key's backoff
 * across.
 *
 * <h2>A store write refused for good</h2>
 * A purge, park or {@code retryLater} that fails retriably (a lost connection, a timeout, a full disk) is retried
 * with backoff until it succeeds, as everything waits on the database anyway. One that the store refuses with an
 * error a retry cannot cure ({@link StoreException#isRetriable()} false: a permission, a constraint) is narrowed
 * down by halving the batch, so that only the rows it keeps refusing are <em>held</em>: their records stay in
 * flight (their keys wait, their rows stay in the table), the refusal is reported once (an ERROR line, the listener,
 * {@link DispatcherHealth#heldRecords()}), and the purge thread tries their writes again with backoff between its
 * other work, while every other key flows.
 *
 * <h2>Storage fencing</h2>
 * With a store that fences ({@link Store#supportsFencing()}), the mark thread takes the outbox's leader epoch in the
 * database ({@link Store#acquireEpoch()}) once per leadership, before its first read or mark, and every store write
 * of the leader (mark, purge, failure record, park) goes through {@link Store#fencedBy} that epoch. A write the
 * store refuses as fenced ({@link StoreFencedException}: a successor took the epoch since, so this instance is a
 * deposed leader that was paused or cut off) is treated as a lapsed lease: the records it concerned leave flight
 * without a verdict (their rows are the successor's), the leader rewinds (a fresh leader id, nothing queued), reports
 * it (the {@code failure} event, a WARN line with the count) and stands down — it neither reads nor sends — for a
 * backoff ({@code ioErrorBackoff} doubling up to {@code maxIoErrorBackoff}); then, if its election still says it
 * leads with a valid lease, it takes a new epoch and carries on. A deposed leader's election soon says otherwise; and
 * a successor that was fenced by an ex-leader which briefly believed it led again (a paused process that resumes
 * hears of the lost partition only at its next rebalance) wins the epoch back instead of stalling.
 *
 * <p>Sends happen outside {@link #lock} but under {@link #sendLock}, which fencing also takes: once a fence
 * returns, no send starts until leadership is acquired again.
 */
public final class DefaultDispatcher implements Dispatcher {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);
    /** The most gap ranges a cursor harvest rechecks per read; see {@link HarvestCursor}. */
    static final int MAX_GAPS = 256;
    /** With {@code HOLD_KEY}: how often a leader reads the store's parked keys to learn of replays and discards. */
    static final Duration HOLD_CHECK_INTERVAL = Duration.ofSeconds(1);

    private final String name;
    private final Store store;
    private final MessageBroker broker;
    private final LeaderTransport transport;
    private final DispatcherConfig config;
    private final Callbacks callbacks;
    private final Clock clock;
    private final Supplier<UUID> ids;

    private final EngineRuntime runtime;
    private final Lock sendLock;
    private final Lock lock;
    /** Signalled whenever the mark thread may have something to do. */
    private final Condition markWork;
    /** Signalled whenever a record leaves flight. */
    private final Condition drained;

    // --- guarded by lock
    private UUID leaderId;
    private long epoch;
    /** Leaderships acquired so far: the mark thread takes a new epoch in a fencing store for each. */
    private long leaderships;
    /**
     * A write was refused as fenced since the epoch was taken, or a send was refused by a fenced broker: stand down,
     * then (with a fencing store) take a new epoch.
     */
    private boolean epochLost;
    /** The leadership in which {@link #epochLost} was last raised by a fenced broker. */
    private long brokerFencedIn;
    private boolean forceRemark;
    private final KeySchedule schedule;
    /** {@code DispatcherConfig.AfterPark.HOLD_KEY}: a park holds its key until the parked rows leave the table. */
    private final boolean holdKeys;
    /** The cursor harvest's position and gaps; null when harvesting by mark. */
    private final HarvestCursor cursor;
    // ---

    private final WorkQueue<Completion> completions;
    /** Completions whose store write was refused for good, tried again when due; purge thread only. */
    private final List<Completion> held = new ArrayList<>();
    private long heldDueNanos;
    /** How store calls that failed are retried: ioErrorBackoff doubling up to maxIoErrorBackoff. */
    private final Backoff ioBackoff;
    private final Backoff.Sequence heldBackoff;
    /** Records in {@link #held}; guarded by lock, so that a drain can tell them from records still under way. */
    private int heldRecords;
    /** Store writes refused for good and not yet done since: each refusal is reported once. */
    private final Set<String> refusing = ConcurrentHashMap.newKeySet();
    private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
    private final AtomicReference<Throwable> fatal = new AtomicReference<>();
    private final Latch closed;
    private volatile boolean stopMarking;
    /** Counts the store's commit wake-ups ({@link Store#watchCommits}); an idle pause ends when it moves. */
    private final AtomicLong commitSignals = new AtomicLong();
    /**
     * Whether the harvest thread is in an idle pause that a commit wake-up ends: set before it checks
     * {@link #commitSignals}, so that a wake-up either is seen by that check or signals the pause.
     */
    private volatile boolean idlePause;
    /** What the commit watch was last told ({@link #watchNeeded}); a new watch starts needed. Harvest thread. */
    private boolean watchIsNeeded = true;
    /** Whether the last cursor read returned as many rows as it asked for. Harvest thread only. */
    private boolean readFull;
    /** The store's commit wake-ups while this instance harvests, or null. Written by the harvest thread. */
    private volatile Store.CommitWatch commitWatch;
    private volatile boolean stopPurging;
    /** Counted down with stopMarking / stopPurging, to cut backoff waits short. */
    private final Latch markStopped;
    private final Latch purgeStopped;
    private volatile boolean stopLeading;
    private volatile boolean leading;

    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong acknowledged = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong parked = new AtomicLong();

    private final NeliStateMachine machine;
    /** Incremented by every request to stop publishing, so that a send batch under way stops early. */
    private final AtomicInteger stopRequests = new AtomicInteger();

    private EngineRuntime.Worker leaderThread;
    private EngineRuntime.Worker markThread;
    private EngineRuntime.Worker purgeThread;
    private EngineRuntime.Worker sampleThread;
    private final OutboxSampler sampler;
    /** Whether the store fences deposed leaders ({@link Store#supportsFencing()}). */
    private final boolean fencing;
    /** The store as this leader writes to it: fenced by its epoch once taken, else the store itself. */
    private volatile Store writes;
    /** The epoch {@link #writes} is fenced by, or 0. */
    private volatile long takenEpoch;
    /** Store writes refused as fenced, since the start. */
    private final AtomicLong fencedWrites = new AtomicLong();
    /** Records whose send the broker refused as fenced ({@link DeliveryException#isFenced()}), since the start. */
    private final AtomicLong fencedSends = new AtomicLong();

    // --- health: written by the engine's threads where the events happen, read by health()
    /** The leader id while leading: a copy of {@link #leaderId} readable without the lock. */
    /** What health reports: leader id, fenced, last mark and purge, last failure, outage, sample, status. */
    private final EngineHealth health = new EngineHealth();
    private volatile Runnable onDeath;

    public DefaultDispatcher(String name, Store store, MessageBroker broker, LeaderTransport transport,
                             DispatcherConfig config, DispatcherListener listener, Clock clock) {
        this(name, store, broker, transport, config, listener, EngineRuntime.system(clock));
    }

    /**
     * A dispatcher whose threads, locks, clocks and randomness all come from {@code runtime}: the deterministic
     * simulation's way in. Leader ids are the runtime's random UUIDs.
     */
    public DefaultDispatcher(String name, Store store, MessageBroker broker, LeaderTransport transport,
                             DispatcherConfig config, DispatcherListener listener, EngineRuntime runtime) {
        this(name, store, broker, transport, config, listener, runtime, runtime::randomUuid);
    }

    DefaultDispatcher(String name, Store store, MessageBroker broker, LeaderTransport transport,
                      DispatcherConfig config, DispatcherListener listener, Clock clock, Supplier<UUID> ids) {
        this(name, store, broker, transport, config, listener, EngineRuntime.system(clock), ids);
    }

    private DefaultDispatcher(String name, Store store, MessageBroker broker, LeaderTransport transport,
                              DispatcherConfig config, DispatcherListener listener, EngineRuntime runtime,
                              Supplier<UUID> ids) {
        this.runtime = runtime;
        this.sendLock = runtime.newLock();
        this.lock = runtime.newLock();
        this.markWork = lock.newCondition();
        this.drained = lock.newCondition();
        this.completions = new WorkQueue<>(runtime);
        this.closed = new Latch(runtime);
        this.markStopped = new Latch(runtime);
        this.purgeStopped = new Latch(runtime);
        Clock clock = runtime.clock();
        this.name = name;
        this.store = store;
        this.broker = broker;
        this.transport = transport;
        this.config = config;
        this.callbacks = new Callbacks(name, listener);
        this.clock = clock;
        this.ids = ids;
        this.schedule = new KeySchedule(config.maxInFlightRecords(), config.maxInFlightBytes(),
                config.ioErrorBackoff(), config.maxIoErrorBackoff(), config.maxAttempts(), clock,
                runtime::random);
        schedule.retryAtTail = runtime.planted(PlantedBug.RETRY_OVERTAKES_HEAD);
        this.holdKeys = config.afterPark() == DispatcherConfig.AfterPark.HOLD_KEY;
        if (holdKeys && !store.supportsHoldKey()) {
            throw new IllegalArgumentException("afterPark " + config.afterPark() + " needs a store that supports held"
                    + " keys (Store.supportsHoldKey), and " + store.getClass().getName() + " does not; use MOVE_ON");
        }
        schedule.holdKeysAfterPark(holdKeys);
        this.cursor = config.harvest() == DispatcherConfig.Harvest.CURSOR ? new HarvestCursor(MAX_GAPS) : null;
        this.ioBackoff = Backoff.exponential(config.ioErrorBackoff(), config.maxIoErrorBackoff());
        this.heldBackoff = ioBackoff.sequence();
        this.fencing = store.supportsFencing();
        this.writes = store;
        this.sampler = new OutboxSampler(runtime, store, config.metricsInterval(), () -> leading, this::onSample,
                e -> reportFailure("sample", e));
        this.machine = new NeliStateMachine(runtime.randomUuid(), config.heartbeatTimeout(), config.pollInterval(),
                runtime::nanoTime, new NeliStateMachine.Actions() {
                    @Override
                    public void acquired(UUID id) {
                        onAcquired(id);
                    }

                    @Override
                    public void fenced() {
                        onFenced();
                    }

                    @Override
                    public void revoked() {
                        onRevoked();
                    }

                    @Override
                    public boolean reconfirm() {
                        try {
                            return transport.reconfirm();
                        } catch (RuntimeException e) {
                            log.warn("{}: the leader transport could not reconfirm the assignment; trusting its next"
                                    + " poll", name, e);
                            return false;
                        }
                    }
                }, ids);
    }

    // ------------------------------------------------------------------------------------------ lifecycle

    @Override
    public void start() {
        if (!state.compareAndSet(State.NEW, State.RUNNING)) {
            throw new IllegalStateException("dispatcher '" + name + "' was already started (state " + state.get()
                    + ")");
        }
        log.info("{}: starting with {}", name, config);
        purgeThread = newThread("purge", this::purgeLoop);
        markThread = newThread("mark", this::markLoop);
        leaderThread = newThread("leader", this::leaderLoop);
        sampleThread = newThread("sample", sampler);
    }

    private EngineRuntime.Worker newThread(String role, Runnable body) {
        return runtime.start(name + "-" + role, () -> {
            try {
                body.run();
            } catch (Throwable e) {
                die(role, e);
            }
        });
    }

    /** Whether the calling thread is one of this dispatcher's. */
    private boolean onOwnThread() {
        for (EngineRuntime.Worker w : new EngineRuntime.Worker[] {leaderThread, markThread, purgeThread,
                sampleThread}) {
            if (w != null && w.isCurrent()) {
                return true;
            }
        }
        return false;
    }

    private void die(String role, Throwable e) {
        if (state.get() != State.RUNNING) {
            log.warn("{}: {} thread ended with an error while closing", name, role, e);
            return;
        }
        log.error("{}: {} thread died unexpectedly; closing the dispatcher", name, role, e);
        fatal.compareAndSet(null, e);
        health.failed("dispatcher", role + " thread died: " + describe(e),
                clock.instant());
        Runnable hook = onDeath;
        runtime.start(name + "-closer", hook == null ? this::close : () -> {
            close();
            hook.run();
        });
    }

    @Override
    public void close() {
        if (state.compareAndSet(State.NEW, State.CLOSED)) {
            broker.close(config.drainTimeout());
            transport.close();
            closed.open();
            return;
        }
        if (!state.compareAndSet(State.RUNNING, State.CLOSING)) {
            if (onOwnThread()) {
                return; // a dispatcher thread must not wait for itself
            }
            awaitClosedQuietly();
            return;
        }
        long deadline = runtime.nanoTime() + config.drainTimeout().toNanos();
        log.info("{}: closing; draining for at most {}", name, config.drainTimeout());
        stopMarking = true;
        markStopped.open();
        sampler.stop();
        signalMarkThread();
        join(markThread, deadline);
        boolean wasLeading = stopPublishing(false);
        broker.flush(remaining(deadline));
        boolean drainedAll = awaitDrained(deadline);
        broker.close(remaining(deadline).isZero() ? Duration.ofSeconds(1) : remaining(deadline));
        if (!drainedAll) {
            // The broker failed what was pending: let the purge thread reset those rows for a while.
            awaitDrained(runtime.nanoTime() + config.ioErrorBackoff().toNanos() + TimeUnit.SECONDS.toNanos(1));
        }
        stopPurging = true;
        purgeStopped.open();
        purgeThread.interrupt();
        join(purgeThread, runtime.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        stopStoreHarvest(); // after the last purge: a stream confirms what was acknowledged before it closes
        if (wasLeading) {
            log.info("{}: leadership given up on close", name);
            notifyListener("leaderRevoked", DispatcherListener::leaderRevoked);
        }
        stopLeading = true;
        join(leaderThread, runtime.nanoTime() + config.drainTimeout().toNanos());
        join(sampleThread, runtime.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        int left = inFlightRecords();
        if (left > 0) {
            log.warn("{}: closed with {} records unacknowledged; they stay in the outbox for the next leader",
                    name, left);
        }
        state.set(State.CLOSED);
        reportStatus();
        closed.open();
        log.info("{}: closed", name);
    }

    private void awaitClosedQuietly() {
        try {
            closed.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void join(EngineRuntime.Worker t, long deadlineNanos) {
        if (t == null) {
            return;
        }
        try {
            if (!t.join(Math.max(1, deadlineNanos - runtime.nanoTime()))) {
                t.interrupt();
                if (!t.join(TimeUnit.SECONDS.toNanos(5))) {
                    log.error("{}: a thread did not stop", name);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private Duration remaining(long deadlineNanos) {
        return Duration.ofNanos(Math.max(0, deadlineNanos - runtime.nanoTime()));
    }

    private boolean awaitDrained(long deadlineNanos) {
        lock.lock();
        try {
            while (schedule.inFlight() > heldRecords) { // held records wait for a human, not for the broker
                long left = deadlineNanos - runtime.nanoTime();
                if (left <= 0) {
                    return false;
                }
                drained.awaitNanos(left);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return schedule.inFlight() <= heldRecords;
        } finally {
            lock.unlock();
        }
    }

    /**
     * What to run after this dispatcher closed itself because one of its threads died (a sharded dispatcher closes
     * its other shards then). Set before {@link #start()}.
     */
    void onDeath(Runnable hook) {
        this.onDeath = hook;
    }

    /** The error a thread of this dispatcher died of, if one did. */
    Throwable fatalError() {
        return fatal.get();
    }

    @Override
    public void await() throws InterruptedException {
        closed.await();
        Throwable e = fatal.get();
        if (e != null) {
            throw new OutboxException("dispatcher '" + name + "' stopped after an unexpected error", e);
        }
    }

    @Override
    public State state() {
        return state.get();
    }

    @Override
    public boolean isLeader() {
        return leading;
    }

    @Override
    public Optional<UUID> leaderId() {
        lock.lock();
        try {
            return Optional.ofNullable(leaderId);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int inFlightRecords() {
        lock.lock();
        try {
            return schedule.inFlight();
        } finally {
            lock.unlock();
        }
    }

    private int heldKeys() {
        lock.lock();
        try {
            return schedule.heldKeys();
        } finally {
            lock.unlock();
        }
    }

    private int heldRecords() {
        lock.lock();
        try {
            return heldRecords;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int inFlightKeys() {
        return inFlightRecords(); // one record per key, by construction
    }

    @Override
    public DispatcherHealth health() {
        return health.report(state.get(), inFlightRecords(), callbacks.errors(), heldRecords(), heldKeys());
    }

    /**
     * The engine's scheduling state, for the deterministic simulation's state hashing: leading or not, the epoch,
     * the per-key schedule and the cursor. Read without the lock: only meaningful while every other thread of the
     * dispatcher is stopped, as the simulation's are whenever it asks.
     */
    public String simulationState() {
        return (leaderId != null) + "/" + epoch + "/" + forceRemark + "/" + schedule + "/" + cursor;
    }

    @Override
    public void addObserver(DispatcherObserver observer) {
        callbacks.add(observer);
    }

    @Override
    public void removeObserver(DispatcherObserver observer) {
        callbacks.remove(observer);
    }

    /**
     * Hook: tells the observers when the health status changed. Called by the leader thread after each poll (every
     * leadership change happens on it) and, once that thread has ended, by close: never by two threads at once.
     */
    private void reportStatus() {
        DispatcherHealth.Status now = health.changedStatus(state.get());
        if (now != null) {
            callbacks.statusChanged(now);
        }
    }

    private void onSample(OutboxSample sample) {
        if (!leading) {
            return; // leadership ended while the sample was taken: not this instance's figure any more
        }
        health.sampled(sample);
        callbacks.sampled(sample); // hook: sample
    }

    // ------------------------------------------------------------------------------------------ leadership

    private void leaderLoop() {
        Instant lastMeter = clock.instant();
        long[] lastCounts = new long[4];
        try {
            transport.start(machine);
            while (!stopLeading) {
                transport.poll(config.pollInterval());
                machine.polled();
                health.electionJoined();
                Heartbeat hb = machine.tick();
                if (hb != null) {
                    transport.publish(hb);
                }
                reportStatus();
                Instant now = clock.instant();
                if (Duration.between(lastMeter, now).compareTo(config.metricsInterval()) >= 0) {
                    emitMeter(lastMeter, now, lastCounts);
                    lastMeter = now;
                }
            }
            emitMeter(lastMeter, clock.instant(), lastCounts); // a last read, covering the drain on close
        } finally {
            try {
                transport.close();
            } catch (RuntimeException e) {
                log.warn("{}: closing the leader transport failed", name, e);
            }
            stopPublishing(false);
        }
    }

    private void emitMeter(Instant from, Instant to, long[] last) {
        long[] now = {sent.get(), acknowledged.get(), failed.get(), parked.get()};
        MeterReading reading = new MeterReading(to, Duration.between(from, to), now[0] - last[0],
                now[1] - last[1], now[2] - last[2], now[3] - last[3], inFlightRecords(), now[1]);
        System.arraycopy(now, 0, last, 0, 4);
        notifyListener("meterRead", l -> l.meterRead(reading));
    }

    private void onAcquired(UUID id) {
        if (stopMarking) {
            return;
        }
        lock.lock();
        try {
            leaderId = id;
            health.leading(id);
            epoch++;
            leaderships++;
            forceRemark = false;
            schedule.start();
            rewindCursor();
            leading = true;
            markWork.signalAll();
        } finally {
            lock.unlock();
        }
        log.info("{}: leader acquired, leader id {}", name, id);
        notifyListener("leaderAcquired", l -> l.leaderAcquired(id));
    }

    private void onFenced() {
        if (stopPublishing(true)) {
            health.fenced(true);
            log.warn("{}: leader fenced: stopped publishing", name);
            notifyListener("leaderFenced", DispatcherListener::leaderFenced);
        }
    }

    private void onRevoked() {
        boolean was = stopPublishing(false);
        boolean all = runtime.planted(PlantedBug.NO_FLUSH_ON_HANDOVER)
                || awaitDrained(runtime.nanoTime() + config.drainTimeout().toNanos());
        if (!all) {
            log.warn("{}: leadership revoked with {} records still in flight after {}", name, inFlightRecords(),
                    config.drainTimeout());
        }
        if (was) {
            health.fenced(false);
            log.info("{}: leader revoked", name);
            notifyListener("leaderRevoked", DispatcherListener::leaderRevoked);
        }
    }

    /**
     * Stops sending: clears the leader id and every pending record. Taking {@link #sendLock} first means that
     * no send is under way when this returns.
     *
     * @return whether this instance was leading
     */
    private boolean stopPublishing(boolean fenced) {
        stopRequests.incrementAndGet();
        sendLock.lock();
        try {
            lock.lock();
            try {
                boolean was = leaderId != null;
                leaderId = null;
                health.notLeading();
                leading = false;
                epoch++;
                schedule.stop();
                rewindCursor();
                markWork.signalAll();
                return was;
            } finally {
                lock.unlock();
            }
        } finally {
            sendLock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------ marking

    private void markLoop() {
        Backoff.Sequence readFailures = ioBackoff.sequence();
        // An idle outbox is read again after markBackoff, doubling up to pollInterval while reads find nothing.
        Backoff.Sequence idle = Backoff.exponential(config.markBackoff(), config.pollInterval()).sequence();
        long lastRescan = runtime.nanoTime();
        boolean lastReadFull = true; // until a read says otherwise, a send may be followed by more
        // The epoch the store was last read in, or -1: a store that holds something while it is harvested (a
        // replication stream) is told by this thread, never during a read, to let go when that epoch ends.
        long harvestEpoch = -1;
        long harvestEndedAt = Long.MIN_VALUE; // when the loop saw that epoch end
        long epochTakenFor = 0; // the leadership for which a fencing store's epoch was taken (0: none yet)
        long brokerStoodDownFor = 0; // the leadership in which a fenced broker last had this thread stand down
        Backoff.Sequence fencedBackoff = ioBackoff.sequence();
        long holdsReadFor = 0; // HOLD_KEY: the leadership for which the parked keys were read (0: none yet)
        long lastHoldsRead = 0;
        try {
            while (!stopMarking) {
                UUID markAs;
                long markEpoch;
                long leadership;
                boolean needEpoch;
                boolean standDown;
                boolean brokerStandDown;
                int room;
                int worthReading;
                List<KeySchedule.Flight> toSend;
                boolean brokerIdle;
                boolean stopHarvest = false;
                boolean readHolds;
                long holdsStarted;
                lock.lock();
                try {
                    if (leaderId != null && forceRemark) {
                        refreshLeaderId();
                    }
                    if (harvestEpoch != -1 && (leaderId == null || epoch != harvestEpoch)) {
                        // Not leading any more, or in a new epoch: let go (below). Having lost leadership, first
                        // let what is in flight settle (its acknowledgements reach the store: a stream confirms
                        // them before it closes, so that an orderly hand-over makes no duplicates), up to the drain
                        // timeout.
                        long now = runtime.nanoTime();
                        if (harvestEndedAt == Long.MIN_VALUE) {
                            harvestEndedAt = now;
                        }
                        if (leaderId == null && schedule.inFlight() > heldRecords
                                && now - harvestEndedAt < config.drainTimeout().toNanos()) {
                            awaitMarkWork(config.pollInterval());
                            continue;
                        }
                        harvestEndedAt = Long.MIN_VALUE;
                        stopHarvest = true;
                    } else if (leaderId == null || !leaseValid()) {
                        // Not leading, or the lease lapsed and the leader thread has not fenced yet (stalled?).
                        awaitMarkWork(config.pollInterval());
                        continue;
                    }
                    brokerIdle = schedule.inFlight() == 0;
                    // A fencing store's epoch is taken once per leadership (and again after a write was refused as
                    // fenced) before anything is read or sent.
                    needEpoch = fencing && (epochTakenFor != leaderships || epochLost);
                    standDown = needEpoch && epochLost && epochTakenFor == leaderships;
                    // Without a fencing store, a fenced broker's stand-down has no epoch to take after it.
                    brokerStandDown = !fencing && epochLost;
                    if (brokerStandDown && brokerFencedIn != leaderships) {
                        epochLost = false; // raised in an earlier leadership: this one is new, nothing to wait for
                        brokerStandDown = false;
                    }
                    // HOLD_KEY: the held keys are read from the store's parked table once per leadership before
                    // anything is read or sent, and then every HOLD_CHECK_INTERVAL to learn of replays and discards.
                    readHolds = holdKeys && !needEpoch && (holdsReadFor != leaderships
                            || runtime.nanoTime() - lastHoldsRead >= HOLD_CHECK_INTERVAL.toNanos());
                    holdsStarted = schedule.parkedKeysReadStarted();
                    toSend = needEpoch || readHolds || brokerStandDown ? List.of()
                            : schedule.takeReady(Integer.MAX_VALUE, runtime.nanoTime());
                    room = schedule.room();
                    worthReading = schedule.readThreshold(config.markBatchSize());
                    markAs = leaderId;
                    markEpoch = epoch;
                    leadership = leaderships;
                } finally {
                    lock.unlock();
                }
                if (stopHarvest) {
                    stopStoreHarvest();
                    harvestEpoch = -1;
                    continue;
                }
                if (brokerStandDown) {
                    if (brokerStoodDownFor != leadership) {
                        fencedBackoff.reset(); // a new leadership
                        brokerStoodDownFor = leadership;
                    }
                    if (pause(fencedBackoff.next())) {
                        continue; // leadership changed or closing meanwhile
                    }
                    lock.lock();
                    try {
                        epochLost = false; // the broker is asked again at the next send (Kafka: initTransactions)
                    } finally {
                        lock.unlock();
                    }
                    continue;
                }
                if (needEpoch) {
                    if (epochTakenFor != leadership) {
                        fencedBackoff.reset(); // a new leadership
                    }
                    if (standDown && pause(fencedBackoff.next())) {
                        continue; // leadership changed or closing meanwhile
                    }
                    if (standDown && !leaseValid()) {
                        continue;
                    }
                    Duration failed = takeEpochWhileLeading(leadership, readFailures);
                    if (failed != null) {
                        if (!failed.isZero()) {
                            pause(failed);
                        }
                        continue;
                    }
                    epochTakenFor = leadership;
                    lock.lock();
                    try {
                        epochLost = false;
                    } finally {
                        lock.unlock();
                    }
                    continue;
                }
                if (readHolds) {
                    if (readHeldKeys(leadership, holdsStarted, holdsReadFor == leadership, readFailures)) {
                        holdsReadFor = leadership;
                    }
                    lastHoldsRead = runtime.nanoTime();
                    continue;
                }
                if (!toSend.isEmpty()) {
                    send(toSend, markEpoch);
                    if (brokerIdle && !lastReadFull) {
                        // Caught up, and nothing else in flight: nothing will fill the broker's batch soon. With
                        // records in flight, a lingering batch fills while they complete (a busy outbox batches).
                        broker.sendPending();
                        if (!store.readWaits()) {
                            awaitSentSettled();
                        }
                    }
                    continue;
                }
                if (room < worthReading) {
                    // Throttled (records or bytes): wait until acknowledgements make room for a read, or a retry falls
                    // due.
                    lock.lock();
                    try {
                        if (!schedule.hasReady() && epoch == markEpoch && !forceRemark && !stopMarking) {
                            awaitMarkWork(untilDue(config.pollInterval()));
                        }
                    } finally {
                        lock.unlock();
                    }
                    continue;
                }
                if (harvestEpoch == -1) {
                    watchCommits();
                }
                harvestEpoch = markEpoch;
                long signalsBefore = commitSignals.get();
                int limit = Math.min(room, config.markBatchSize()); // a mark's; a read's is its request's
                int read = cursor != null ? readOnce(room, markEpoch, readFailures)
                        : markOnce(markAs, limit, markEpoch, readFailures);
                if (read < 0) {
                    continue; // failed; backed off already
                }
                lastReadFull = cursor != null ? readFull : read >= limit;
                if (read == 0 && store.readWaits()) {
                    idle.reset(); // the read waited for rows already: read again at once
                } else if (read == 0) {
                    watchNeeded(true);
                    pauseUnlessCommitted(idle.next(), signalsBefore);
                } else {
                    idle.reset();
                    watchNeeded(false); // busy: it reads again at once, wake-ups would be wasted
                }
                if (cursor != null && read < room
                        && runtime.nanoTime() - lastRescan >= config.rescanInterval().toNanos()) {
                    // Caught up: read the table from its head once more, a safety net (see HarvestCursor).
                    lastRescan = runtime.nanoTime();
                    lock.lock();
                    try {
                        cursor.rescan();
                    } finally {
                        lock.unlock();
                    }
                }
            }
        } finally {
            if (harvestEpoch != -1 && state.get() != State.CLOSING) {
                stopStoreHarvest(); // on close, close() does it once the acknowledgements in flight were purged
            }
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
            parkedKeys = store.parkedKeys();
        } catch (RuntimeException e) {
            reportFailure("parkedKeys", e);
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
        lock.lock();
        try {
            if (leaderships != leadership || leaderId == null) {
                return false; // a new leadership reads them again
            }
            heldBefore = schedule.heldKeys();
            released = schedule.parkedKeysRead(parkedKeys, started);
            heldNow = schedule.heldKeys();
            if (!released.isEmpty()) {
                // The released keys' records were dropped while held: read them again, from the head.
                schedule.abandon();
                if (cursor != null) {
                    rewindCursor();
                } else {
                    forceRemark = true; // marked rows are taken again only under a fresh leader id
                }
                markWork.signalAll();
            }
        } finally {
            lock.unlock();
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

    /**
     * Takes the outbox's leader epoch in a fencing store, if this instance still holds {@code leadership}: from now on
     * this leader's writes are fenced by it. Holds {@link #sendLock} throughout, as {@link #stopPublishing} does: a
     * revocation or fence that began before waits until the epoch was taken, and one that completed first stops it
     * from being taken. Without that, a leader revoked between deciding to take the epoch and taking it would take
     * it after its successor had, and fence the successor out.
     *
     * @return null if taken; zero if this instance no longer leads; else how long to back off after a failure,
     *         which was reported
     */
    private Duration takeEpochWhileLeading(long leadership, Backoff.Sequence failures) {
        long taken;
        sendLock.lock();
        try {
            lock.lock();
            try {
                if (leaderId == null || leaderships != leadership || stopMarking) {
                    return Duration.ZERO;
                }
            } finally {
                lock.unlock();
            }
            taken = store.acquireEpoch();
            failures.reset();
        } catch (RuntimeException e) {
            Duration wait = failures.next();
            log.warn("{}: taking the outbox's leader epoch in the database failed; retrying in {}", name, wait, e);
            reportFailure("fence", e);
            return wait;
        } finally {
            sendLock.unlock();
        }
        takenEpoch = taken;
        writes = store.fencedBy(taken);
        log.info("{}: took leader epoch {} in the database: writes of earlier leaders are refused from now on", name,
                taken);
        return null;
    }

    /**
     * The broker refused {@code records} sends as fenced ({@link DeliveryException#isFenced()}: a successor fenced
     * this sender out, e.g. Kafka's transactional producer). Counts and reports it, rewinds, and has the mark thread
     * stand down before it sends again (the broker then asks for the sender back: a deposed leader's election soon
     * says it no longer leads); with a fencing store, it also takes a new epoch after the stand-down.
     */
    private void fencedByBroker(int records, DeliveryException e) {
        long n = fencedSends.addAndGet(records);
        reportFailure("send", e);
        boolean first = loseEpoch(true);
        if (first) {
            log.warn("{}: the broker refused {} send(s) as fenced ({} so far): {}; standing down before sending again",
                    name, records, n, e.getMessage());
        } else {
            log.info("{}: the broker refused {} more send(s) as fenced ({} so far)", name, records, n);
        }
    }

    /**
     * A write was refused as fenced (by the broker, or by the store): the epoch is lost, what was in flight is
     * abandoned and the harvest rewinds, and the mark thread is woken to stand down. Returns whether the epoch was
     * held until now (the first refusal of this loss).
     */
    private boolean loseEpoch(boolean byBroker) {
        lock.lock();
        try {
            boolean first = !epochLost;
            epochLost = true;
            if (byBroker) {
                brokerFencedIn = leaderships;
            }
            forceRemark = leaderId != null;
            schedule.abandon();
            rewindCursor();
            markWork.signalAll();
            return first;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A store write was refused as fenced: another dispatcher took the outbox's epoch since this one did. Counts and
     * reports it, rewinds, and has the mark thread stand down before it takes a new epoch (see the class Javadoc).
     */
    private void fencedByStore(String operation, StoreFencedException e) {
        long n = fencedWrites.incrementAndGet();
        reportFailure(operation, e);
        if (e.epoch() != takenEpoch) {
            // A write begun under an epoch this instance has since replaced: nothing to stand down for.
            log.info("{}: the database refused a {} of an earlier epoch of this instance ({} refused so far)", name,
                    operation, n);
            return;
        }
        boolean first = loseEpoch(false);
        if (first) {
            log.warn("{}: the database refused a {} ({} writes refused so far): {}; standing down, then taking a new"
                    + " epoch if this instance still leads", name, operation, n, e.getMessage());
        } else {
            log.info("{}: the database refused a {} of an earlier epoch ({} refused so far)", name, operation, n);
        }
    }

    /**
     * Subscribes to the store's commit wake-ups ({@link Store#watchCommits}), if it has them, as this instance starts
     * harvesting: an idle pause then ends as soon as something may have been committed.
     */
    private void watchCommits() {
        if (commitWatch != null) {
            return;
        }
        watchIsNeeded = true;
        try {
            commitWatch = store.watchCommits(() -> {
                commitSignals.incrementAndGet();
                if (idlePause) {
                    signalMarkThread(); // else the harvest thread is busy: it reads again anyway
                }
            });
        } catch (RuntimeException e) {
            log.warn("{}: the store's commit wake-ups could not start; polling every {} instead", name,
                    config.pollInterval(), e);
        }
    }

    /** Tells the commit watch, if any, whether wake-ups are needed (see {@link Store.CommitWatch#needed}). */
    private void watchNeeded(boolean needed) {
        Store.CommitWatch watch = commitWatch;
        if (watch != null && watchIsNeeded != needed) {
            watchIsNeeded = needed;
            try {
                watch.needed(needed);
            } catch (RuntimeException e) {
                log.warn("{}: the store's commit wake-ups failed to change", name, e);
            }
        }
    }

    /** Tells the store that this instance no longer harvests it (see {@link Store#harvestStopped()}). */
    private void stopStoreHarvest() {
        Store.CommitWatch watch = commitWatch;
        commitWatch = null;
        if (watch != null) {
            try {
                watch.close();
            } catch (RuntimeException e) {
                log.warn("{}: the store's commit wake-ups failed to close", name, e);
            }
        }
        try {
            store.harvestStopped();
        } catch (RuntimeException e) {
            log.warn("{}: the store failed to let go of its harvest", name, e);
        }
    }

    /**
     * One cursor read of up to {@code room} rows: queues the new rows behind their keys and parks unreadable ones.
     * A failed read changed nothing, so it is only retried after a backoff: the cursor stays where it was.
     *
     * @return the rows read, or -1 if the read failed
     */
    private int readOnce(int room, long markEpoch, Backoff.Sequence failures) {
        HarvestCursor.Request request;
        lock.lock();
        try {
            schedule.readStarted();
            request = cursor.request(room);
            if (runtime.planted(PlantedBug.CURSOR_SKIPS_OPEN)) {
                request = new HarvestCursor.Request(request.generation(), request.after(), List.of(), request.limit());
            }
        } finally {
            lock.unlock();
        }
        ReadResult result;
        try {
            long readStart = runtime.nanoTime();
            result = store.read(request.after(), request.recheck(), request.limit());
            callbacks.marked(result.size(), Duration.ofNanos(runtime.nanoTime() - readStart)); // hook: mark (read)
            health.marked(clock.instant());
            failures.reset();
        } catch (RuntimeException e) {
            endMark();
            Duration wait = failures.next();
            log.warn("{}: read failed; retrying in {}", name, wait, e);
            reportFailure("read", e);
            pause(wait);
            return -1;
        }
        if (!result.rows().rejected().isEmpty()) {
            parkRejected(result.rows().rejected());
        }
        int unexpected = 0;
        lock.lock();
        try {
            if (epoch == markEpoch && !forceRemark) {
                HarvestCursor.Advance advance = cursor.advance(request, result);
                if (!advance.stale()) {
                    for (OutboxRecord r : result.rows().records()) {
                        if (schedule.offer(r) && advance.unexpected().contains(r.id())) {
                            unexpected++;
                        }
                    }
                }
            }
            // else: leadership changed or the lease lapsed meanwhile; the cursor was rewound to the head.
        } finally {
            schedule.readEnded();
            lock.unlock();
        }
        if (unexpected > 0) {
            log.warn("{}: {} rows appeared below the cursor where the store said none could (ids reset by hand, or"
                    + " a writer transaction longer than the store's late-commit window); publishing them now,"
                    + " possibly after later rows of their keys", name, unexpected);
        }
        readFull = result.size() >= request.limit();
        return result.size();
    }

    /**
     * One mark of up to {@code limit} rows ({@link DispatcherConfig.Harvest#MARK}): queues the marked rows
     * behind their keys and parks unreadable ones. A failed mark rewinds globally: it may have committed.
     *
     * @return the rows marked, or -1 if the mark failed
     */
    private int markOnce(UUID markAs, int limit, long markEpoch, Backoff.Sequence failures) {
        lock.lock();
        try {
            schedule.readStarted();
        } finally {
            lock.unlock();
        }
        MarkResult result;
        try {
            long markStart = runtime.nanoTime();
            result = writes.mark(markAs, limit);
            callbacks.marked(result.size(), Duration.ofNanos(runtime.nanoTime() - markStart)); // hook: mark
            health.marked(clock.instant());
            failures.reset();
        } catch (StoreFencedException e) {
            endMark();
            fencedByStore("mark", e);
            return -1;
        } catch (RuntimeException e) {
            endMark();
            Duration wait = failures.next();
            log.warn("{}: mark failed; taking a fresh leader id and retrying in {}", name, wait, e);
            reportFailure("mark", e);
            // Global rewind: the mark may have committed, and rows marked with this id would be skipped by
            // later marks. A fresh leader id marks every unacknowledged row again, from the head.
            raiseForceRemark();
            pause(wait);
            return -1;
        }
        if (!result.rejected().isEmpty()) {
            parkRejected(result.rejected());
        }
        lock.lock();
        try {
            if (epoch == markEpoch && !forceRemark) {
                for (OutboxRecord r : result.records()) {
                    schedule.offer(r);
                }
            }
            // else: leadership changed or the lease lapsed meanwhile; the next mark takes these again.
        } finally {
            schedule.readEnded();
            lock.unlock();
        }
        return result.size();
    }

    private void endMark() {
        lock.lock();
        try {
            schedule.readEnded();
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds lock. {@code max}, or less if a key's retry falls due sooner. */
    private Duration untilDue(Duration max) {
        Instant due = schedule.nextDue();
        if (due == null) {
            return max;
        }
        Duration d = Duration.between(clock.instant(), due);
        return d.isNegative() ? Duration.ZERO : min(d.plusMillis(1), max);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** Caller holds lock. Takes a fresh leader id: every unacknowledged row will be marked again. */
    private void refreshLeaderId() {
        UUID fresh = ids.get();
        leaderId = fresh;
        epoch++;
        forceRemark = false;
        schedule.abandon();
        rewindCursor();
        log.info("{}: leader refreshed, leader id {}", name, fresh);
        health.leading(fresh);
        notifyListener("leaderRefreshed", l -> l.leaderRefreshed(fresh));
    }

    /** Caller holds lock. What was queued was forgotten: the cursor harvest reads again from the head. */
    private void rewindCursor() {
        if (cursor != null) {
            cursor.rewind();
        }
    }

    /**
     * Whether the leadership lease (last own heartbeat + heartbeat timeout) still holds, on the monotonic clock: a
     * step of the wall clock changes nothing.
     */
    private boolean leaseValid() {
        return machine.leaseValid(runtime.nanoTime());
    }

    private void send(List<KeySchedule.Flight> batch, long markEpoch) {
        int stops = stopRequests.get();
        sendLock.lock();
        try {
            boolean current;
            lock.lock();
            try {
                current = epoch == markEpoch && leaderId != null;
            } finally {
                lock.unlock();
            }
            int i = 0;
            for (; current && i < batch.size(); i++) {
                if (stopRequests.get() != stops) {
                    break; // leadership is being given up: send nothing more
                }
                if (!leaseValid()) {
                    log.warn("{}: leadership lease lapsed before a send; holding back", name);
                    raiseForceRemark(); // the held-back rows stay marked with this id: re-mark them later
                    break;
                }
                KeySchedule.Flight f = batch.get(i);
                CompletionStage<Void> stage;
                try {
                    stage = broker.send(f.record());
                } catch (RuntimeException e) {
                    completions.add(new Completion(f, e, runtime.nanoTime()));
                    continue;
                }
                sent.incrementAndGet();
                callbacks.sent(f.record()); // hook: send
                if (runtime.planted(PlantedBug.PURGE_BEFORE_ACK)) {
                    try {
                        store.purge(List.of(f.record().id()));
                    } catch (RuntimeException e) {
                        log.debug("{}: planted purge failed", name, e);
                    }
                }
                stage.whenComplete((ok, error) -> completions.add(new Completion(f, error, runtime.nanoTime())));
            }
            if (i < batch.size()) {
                // Fenced, refreshed or lease lapsed before these were sent: they never leave.
                lock.lock();
                try {
                    for (KeySchedule.Flight f : batch.subList(i, batch.size())) {
                        schedule.unsent(f);
                    }
                    drained.signalAll();
                    markWork.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        } finally {
            sendLock.unlock();
        }
    }

    private void parkRejected(List<MarkResult.Rejected> rejected) {
        Map<Long, String> reasons = new LinkedHashMap<>();
        for (MarkResult.Rejected r : rejected) {
            reasons.put(r.id(), Excerpt.of(r.reason(), Excerpt.MAX_REASON_LENGTH));
        }
        // Refused rows stay in the table, unheld: the next rescan (or, marking, the next leader id) tries again.
        WriteOutcome outcome = write("park", "park unreadable", reasons, m -> writes.park(m), markStopped);
        if (outcome.fenced() != null) {
            fencedByStore("park", outcome.fenced());
            return;
        }
        if (outcome.stopped()) {
            return;
        }
        if (outcome.refused().isEmpty() && refusing.remove("park unreadable")) {
            log.info("{}: parking unreadable rows works again", name);
        }
        Instant now = clock.instant();
        if (holdKeys) {
            lock.lock();
            try {
                for (MarkResult.Rejected r : rejected) {
                    if (!outcome.refused().contains(r.id()) && r.key() != null) {
                        schedule.hold(r.key());
                    }
                }
            } finally {
                lock.unlock();
            }
        }
        for (MarkResult.Rejected r : rejected) {
            if (!outcome.refused().contains(r.id())) {
                reportParked(new ParkedRecord(r.id(), r.topic(), r.key(), r.attempts(), reasons.get(r.id()), now));
            }
        }
    }

    private void raiseForceRemark() {
        lock.lock();
        try {
            forceRemark = true;
            schedule.abandon();
            rewindCursor();
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds lock. */
    private void awaitMarkWork(Duration max) {
        try {
            markWork.awaitNanos(max.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopMarking = true;
        }
    }

    private void signalMarkThread() {
        lock.lock();
        try {
            markWork.signalAll();
        } finally {
            lock.unlock();
        }
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
     * The longest {@link #awaitSentSettled} waits, whatever {@code markBackoff} says: long enough for a broker's
     * acknowledgement, short enough that commits it does not wake for are not held back when acknowledgements are
     * slow (an outage, a broker far away).
     */
    private static final Duration SETTLED_WAIT_MAX = Duration.ofMillis(10);

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
        lock.lock();
        try {
            long e0 = epoch;
            while (!stopMarking && epoch == e0 && schedule.inFlight() > 0 && !schedule.hasReady()) {
                long left = deadline - runtime.nanoTime();
                if (left <= 0) {
                    return;
                }
                markWork.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopMarking = true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@link #pause}, cut short too when the store signals a commit after {@code signalsSeen} (the count of commit
     * wake-ups read before the read that found nothing; -1: not watched).
     */
    private boolean pauseUnlessCommitted(Duration d, long signalsSeen) {
        long deadline = runtime.nanoTime() + d.toNanos();
        lock.lock();
        idlePause = signalsSeen >= 0;
        try {
            long e0 = epoch;
            while (!stopMarking && epoch == e0) {
                long left = deadline - runtime.nanoTime();
                if (left <= 0 || schedule.hasReady() || (signalsSeen >= 0 && commitSignals.get() != signalsSeen)) {
                    return false;
                }
                markWork.awaitNanos(Math.min(left, untilDue(d).toNanos()));
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopMarking = true;
            return true;
        } finally {
            idlePause = false;
            lock.unlock();
        }
    }
    // ------------------------------------------------------------------------------------------ purge/retry/park

    private void purgeLoop() {
        List<Completion> batch = new ArrayList<>();
        long lastStuckScan = runtime.nanoTime();
        while (!stopPurging) {
            Completion first;
            try {
                first = completions.poll(config.pollInterval().toNanos());
            } catch (InterruptedException e) {
                if (stopPurging) {
                    return;
                }
                continue;
            }
            if (runtime.nanoTime() - lastStuckScan > config.pollInterval().toNanos()) {
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

    private void process(List<Completion> batch) {
        Throwable lastDeliveryError = null;
        List<Long> purgeIds = new ArrayList<>();
        Map<Long, Instant> retryAt = new LinkedHashMap<>();
        Map<Long, String> parkReasons = new LinkedHashMap<>();
        List<ParkedRecord> parkedNow = new ArrayList<>();
        Map<KeySchedule.Flight, KeySchedule.Verdict> verdicts = new HashMap<>();
        Instant now = clock.instant();
        long nowNanos = runtime.nanoTime();
        int failures = 0;
        Set<Long> fencedSendIds = new LinkedHashSet<>();
        DeliveryException brokerFence = null;
        for (Completion c : batch) {
            OutboxRecord r = c.flight.record();
            if (c.error == null) {
                purgeIds.add(r.id());
                continue;
            }
            Throwable cause = unwrap(c.error);
            if (cause instanceof DeliveryException d && d.isFenced()) {
                // A successor fenced this sender out: no verdict, not counted; the row is the successor's.
                brokerFence = d;
                fencedSendIds.add(r.id());
                continue;
            }
            boolean permanent = cause instanceof DeliveryException d && d.isPermanent();
            boolean outage = cause instanceof DeliveryException d && d.isOutage();
            if (c.refusedWrite == null) { // a held one was counted when it came in; only its verdict is recomputed
                lastDeliveryError = cause;
                failures++;
            }
            KeySchedule.Verdict v;
            boolean outageBegins;
            lock.lock();
            try {
                outageBegins = outage && !schedule.inOutage();
                v = outage ? schedule.outage(c.flight) : schedule.failure(c.flight, permanent);
            } finally {
                lock.unlock();
            }
            verdicts.put(c.flight, v);
            if (outageBegins) {
                boolean warn = health.outageBegan(now);
                log.atLevel(warn ? org.slf4j.event.Level.WARN : org.slf4j.event.Level.DEBUG).log("{}: the broker is"
                        + " unavailable ({}); every failing key is held and retried with a shared backoff for as long"
                        + " as it lasts; nothing is parked or counted during an outage", name, describe(cause));
            }
            if (v.outage()) {
                log.debug("{}: delivery of record {} (key {}) failed in an outage; its key retries at {}", name,
                        r.id(), r.key(), v.nextAttemptAt(), cause);
            } else if (v.park()) {
                String reason = Excerpt.of((permanent ? "permanent failure: " : "failed " + v.attempts()
                        + " times, last: ") + describe(cause), Excerpt.MAX_REASON_LENGTH);
                parkReasons.put(r.id(), reason);
                parkedNow.add(new ParkedRecord(r.id(), r.topic(), r.key(), v.attempts(), reason, now));
            } else {
                retryAt.put(r.id(), v.nextAttemptAt());
                log.debug("{}: delivery of record {} (key {}) failed (attempt {}); its key retries at {}", name,
                        r.id(), r.key(), v.attempts(), v.nextAttemptAt(), cause);
            }
        }
        if (lastDeliveryError != null) { // before the writes: a refused write is the failure health should show
            health.failed("send", describe(lastDeliveryError), now);
        }
        boolean barrierFirst = runtime.planted(PlantedBug.BARRIER_BEFORE_PURGE);
        if (barrierFirst) {
            applyVerdicts(batch, verdicts, Set.of(), fencedSendIds);
        }
        Set<Long> refused = new LinkedHashSet<>();
        // Writes refused as fenced: their records leave flight without a verdict, and this instance stands down.
        Set<Long> fencedIds = new LinkedHashSet<>(fencedSendIds);
        StoreFencedException fence = null;
        String fencedOperation = null;
        int purged = 0;
        if (!purgeIds.isEmpty()) {
            long purgeStart = runtime.nanoTime();
            Map<Long, Boolean> ids = new LinkedHashMap<>();
            purgeIds.forEach(id -> ids.put(id, Boolean.TRUE));
            WriteOutcome o = write("purge", "purge", ids, m -> writes.purge(m.keySet()), purgeStopped);
            refused.addAll(o.refused());
            if (o.fenced() != null) {
                fence = o.fenced();
                fencedOperation = "purge";
                fencedIds.addAll(purgeIds);
            }
            purged = o.fenced() != null ? 0 : purgeIds.size() - o.refused().size();
            if (!o.stopped() && purged > 0) {
                callbacks.purged(purged, Duration.ofNanos(runtime.nanoTime() - purgeStart)); // hook: purge
                health.purged(clock.instant());
            }
        }
        if (!retryAt.isEmpty()) {
            WriteOutcome o = write("retryLater", "retryLater", retryAt, m -> writes.retryLater(m), purgeStopped);
            refused.addAll(o.refused());
            if (o.fenced() != null) {
                fence = o.fenced();
                fencedOperation = "retryLater";
                fencedIds.addAll(retryAt.keySet());
            }
        }
        if (!parkReasons.isEmpty()) {
            WriteOutcome o = write("park", "park", parkReasons, m -> writes.park(m), purgeStopped);
            refused.addAll(o.refused());
            if (o.fenced() != null) {
                fence = o.fenced();
                fencedOperation = "park";
                fencedIds.addAll(parkReasons.keySet());
            }
            if (o.stopped() || o.fenced() != null) {
                parkedNow.clear();
            }
        }
        List<Completion> settled = barrierFirst ? batch : applyVerdicts(batch, verdicts, refused, fencedIds);
        Instant outageBegan = purgeIds.isEmpty() ? null : health.outageEnded();
        if (outageBegan != null) {
            log.info("{}: the broker is available again after an outage of {}", name,
                    Duration.between(outageBegan, now));
        }
        Set<String> stillRefused = new HashSet<>();
        for (Completion c : held) {
            stillRefused.add(c.refusedWrite);
        }
        for (String operation : List.of("purge", "retryLater", "park")) {
            if (!stillRefused.contains(operation) && refusing.remove(operation)) {
                log.info("{}: the store accepts {} again; the records it held were released", name, operation);
            }
        }
        acknowledged.addAndGet(purged);
        failed.addAndGet(failures);
        if (callbacks.observed()) {
            observeCompletions(settled, now, nowNanos);
        }
        for (ParkedRecord p : parkedNow) {
            if (!refused.contains(p.id())) {
                reportParked(p);
            }
        }
        if (fence != null) {
            fencedByStore(fencedOperation, fence);
        }
        if (brokerFence != null) {
            fencedByBroker(fencedSendIds.size(), brokerFence);
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
                                           Map<KeySchedule.Flight, KeySchedule.Verdict> verdicts, Set<Long> refused,
                                           Set<Long> fenced) {
        List<Completion> settled = refused.isEmpty() && fenced.isEmpty() ? batch : new ArrayList<>(batch.size());
        lock.lock();
        try {
            for (Completion c : batch) {
                KeySchedule.Verdict v = verdicts.get(c.flight);
                if (fenced.contains(c.flight.record().id())) {
                    schedule.unsent(c.flight); // a deposed leader's record: the successor reads its row again
                    continue;
                }
                if (refused.contains(c.flight.record().id())) {
                    // Stays in flight: its row stays in the table and its key waits until the write succeeds.
                    held.add(new Completion(c.flight, c.error, c.at,
                            v == null ? "purge" : v.park() ? "park" : "retryLater"));
                    continue;
                }
                if (settled != batch) {
                    settled.add(c);
                }
                if (v == null) {
                    schedule.acknowledged(c.flight);
                } else if (v.outage()) {
                    schedule.heldByOutage(c.flight, v.nextAttemptAt());
                } else if (v.park()) {
                    schedule.parked(c.flight);
                } else {
                    schedule.retryLater(c.flight, v.nextAttemptAt());
                }
            }
            heldRecords = held.size();
            markWork.signalAll();
            drained.signalAll();
        } finally {
            lock.unlock();
        }
        if (!settled.isEmpty() && store.readWaits()) {
            // Keys moved on: their next records must not wait for the end of a read that waits for new rows (the
            // harvest thread sends only between reads). Outside the lock: the store's wait has its own.
            store.wakeRead();
        }
        return settled;
    }

    /** Hooks: acknowledged and failed deliveries, once their rows were purged, retried or parked. */
    private void observeCompletions(List<Completion> batch, Instant now, long nowNanos) {
        for (Completion c : batch) {
            OutboxRecord r = c.flight.record();
            if (c.error == null) {
                Duration sendToAck = Duration.ofNanos(Math.max(0, c.at - c.flight.sentAtNanos()));
                Instant acked = now.minusNanos(Math.max(0, nowNanos - c.at));
                Instant created = r.createdAt();
                Duration commitToAck = created == null || !acked.isAfter(created) ? Duration.ZERO
                        : Duration.between(created, acked);
                callbacks.acknowledged(r, sendToAck, commitToAck);
            } else {
                callbacks.failed(r, unwrap(c.error));
            }
        }
    }

    private void reportParked(ParkedRecord p) {
        parked.incrementAndGet();
        log.error("{}: parked record {} (topic {}, key {}): {}{}", name, p.id(), p.topic(), Excerpt.of(p.key()), p.reason(),
                holdKeys ? "; its key is held (afterPark HOLD_KEY) until the parked row is replayed or discarded"
                        : "");
        notifyListener("recordParked", l -> l.recordParked(p));
        callbacks.parked(p); // hook: park
    }

    /** Remembers a failed operation for {@link #health()} and tells the listener. */
    private void reportFailure(String operation, Throwable e) {
        health.failed(operation, describe(e), clock.instant());
        notifyListener("failure", l -> l.failure(operation, e));
    }

    private void reportStuckSends() {
        List<KeySchedule.Flight> stuck = new ArrayList<>();
        long limit = runtime.nanoTime() - config.queueTimeout().toNanos();
        lock.lock();
        try {
            for (KeySchedule.Flight f : schedule.flights()) {
                if (!f.reportedStuck() && f.sentAtNanos() - limit < 0) {
                    f.markReportedStuck();
                    stuck.add(f);
                }
            }
        } finally {
            lock.unlock();
        }
        for (KeySchedule.Flight f : stuck) {
            TimeoutException e = new TimeoutException("record " + f.record().id() + " (key " + Excerpt.of(f.record().key())
                    + ") unacknowledged after " + config.queueTimeout() + "; its key waits for the broker");
            log.warn("{}: {}", name, e.getMessage());
            reportFailure("send", e);
        }
    }

    /**
     * What became of a batched store write: the ids the store refused for good (narrowed down by halving), and
     * whether it gave up because the dispatcher is closing (the rows stay for the next leader).
     */
    private record WriteOutcome(Set<Long> refused, boolean stopped, StoreFencedException fenced) {
        WriteOutcome(Set<Long> refused, boolean stopped) {
            this(refused, stopped, null);
        }
    }

    /**
     * Runs a batched store write over {@code items} with {@link #retryUntilDone}: retriable failures are retried
     * until they succeed. A batch the store refuses for good is split in halves, each tried on its own (the store
     * applies each call to all of its rows or none), down to the single rows it keeps refusing, which are
     * returned. The first refusal of {@code episode} is reported (ERROR, listener, health); later ones, until
     * the caller ends the episode, only at DEBUG. A refusal of every row costs about twice as many statements as
     * rows, each failing fast.
     */
    private <V> WriteOutcome write(String operation, String episode, Map<Long, V> items, Consumer<Map<Long, V>> call,
                                   Latch stop) {
        Set<Long> refused = new LinkedHashSet<>();
        RuntimeException refusal = null;
        ArrayDeque<Map<Long, V>> parts = new ArrayDeque<>();
        parts.push(items);
        while (!parts.isEmpty()) {
            Map<Long, V> part = parts.pop();
            RuntimeException[] error = new RuntimeException[1];
            if (!retryUntilDone(operation, () -> call.accept(part), stop, error)) {
                if (error[0] == null) {
                    return new WriteOutcome(Set.of(), true);
                }
                if (error[0] instanceof StoreFencedException fenced) {
                    return new WriteOutcome(Set.of(), false, fenced); // not narrowed down: every row is refused
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
                        refused.size(), items.size(), config.maxIoErrorBackoff(), refused, refusal);
                reportFailure(operation, refusal);
            } else {
                log.debug("{}: the store still refuses to {} rows {}: {}", name, operation, refused, describe(refusal));
            }
        }
        return new WriteOutcome(refused, false);
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
    private boolean retryUntilDone(String operation, Runnable call, Latch stop, RuntimeException[] refusal) {
        Backoff.Sequence backoff = ioBackoff.sequence();
        while (true) {
            try {
                call.run();
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
                Duration wait = backoff.next();
                log.warn("{}: {} failed; retrying in {}", name, operation, wait, e);
                reportFailure(operation, e);
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

    private static Throwable unwrap(Throwable e) {
        while (e instanceof CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    private void notifyListener(String kind, Consumer<DispatcherListener> event) {
        callbacks.listener(kind, event);
    }

    // ------------------------------------------------------------------------------------------ types

    /**
     * A broker's answer for one record; {@code at} is its {@link System#nanoTime()}; {@code refusedWrite} names the
     * store write ("purge", "park", "retryLater") that was refused for good while it waits in {@link #held}, else
     * null.
     */
    private record Completion(KeySchedule.Flight flight, Throwable error, long at, String refusedWrite) {
        Completion(KeySchedule.Flight flight, Throwable error, long at) {
            this(flight, error, at, null);
        }
    }
}
