package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxException;
import dev.outbox.OutboxSample;
import dev.outbox.spi.Backoff;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.PurgeListener;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * The harvest engine behind {@link Dispatcher}: wiring and lifecycle. The work is done in rooms of its own, each
 * piece of state with one owner:
 * <ul>
 *   <li>{@link EngineState}: the {@link Leadership}, the per-key {@link KeySchedule} and the {@link HarvestCursor},
 *       under one lock; every transition that rewinds the harvest is there;</li>
 *   <li>{@link LeaderLoop}, thread {@code <name>-leader}: the leader transport and the {@link NeliStateMachine};</li>
 *   <li>{@link HarvestLoop}, thread {@code <name>-mark}: carries out the steps {@link HarvestDecision} chooses —
 *       reads from the {@link HarvestSource} chosen once (cursor or mark), sends through the {@link Sender}, takes
 *       the database epoch, reads held keys;</li>
 *   <li>{@link SettleLoop}, thread {@code <name>-purge}: the broker's answers, purges, retries and parks, written by
 *       {@link StoreWrites} before the keys' barriers are lowered; {@link Fences} when a successor fenced this
 *       instance out;</li>
 *   <li>{@link OutboxSampler}, thread {@code <name>-sample}: the outbox's gauges while leading;</li>
 *   <li>{@link EngineEvents}: the listener, the observers, the health figures and the meters.</li>
 * </ul>
 *
 * <h2>What holds one key, what rewinds everything</h2>
 * A failed delivery holds only its key: the record's attempt count and next attempt time are written to its row, the
 * record goes back to the head of its key, and every other key keeps flowing. Some things still rewind globally,
 * because after them the schedule may no longer describe the table: a failed mark (it may have committed rows this
 * leader never saw), a lapsed lease before a send, a write refused as fenced, and any change of leadership. After
 * them the leader takes a fresh leader id (or stops), abandons every queued record and reads or marks again from the
 * head of the table; records in flight are not queued again while their delivery is under way, and the rows'
 * attempts and next attempt times carry every key's backoff across.
 */
public final class DefaultDispatcher implements Dispatcher {
    private static final Logger log = LoggerFactory.getLogger(DefaultDispatcher.class);
    /** The most gap ranges a cursor harvest rechecks per read; see {@link HarvestCursor}. */
    static final int MAX_GAPS = 256;

    private final String name;
    private final MessageBroker broker;
    private final LeaderTransport transport;
    private final DispatcherConfig config;
    private final EngineRuntime runtime;

    private final EngineState state;
    private final EngineEvents events;
    private final LeaderLoop leader;
    private final HarvestLoop harvest;
    private final SettleLoop settle;
    private final Sender sender;
    private final OutboxSampler sampler;
    /** The leader's store work beside the harvest; null if the store needs none. */
    private final StoreHousekeeping housekeeping;

    private final AtomicReference<State> lifecycle = new AtomicReference<>(State.NEW);
    private final AtomicReference<Throwable> fatal = new AtomicReference<>();
    private final Latch closed;
    private volatile Runnable onDeath;

    private EngineRuntime.Worker leaderThread;
    private EngineRuntime.Worker harvestThread;
    private EngineRuntime.Worker settleThread;
    private EngineRuntime.Worker sampleThread;
    private EngineRuntime.Worker housekeepingThread;

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
        store = StreamStore.of(store); // a store fed by a commit log is harvested through the engine's stream harvest
        this.name = name;
        this.broker = broker;
        this.transport = transport;
        this.config = config;
        this.runtime = runtime;
        this.closed = new Latch(runtime);
        Clock clock = runtime.clock();
        boolean holdKeys = config.afterPark() == DispatcherConfig.AfterPark.HOLD_KEY;
        if (holdKeys && store.capability(ParkedKeys.class).isEmpty()) {
            throw new IllegalArgumentException("afterPark " + config.afterPark() + " needs a store that lists its"
                    + " parked keys (ParkedKeys), and " + store.getClass().getName() + " does not; use MOVE_ON");
        }
        KeySchedule schedule = new KeySchedule(config.maxInFlightRecords(), config.maxInFlightBytes(),
                config.deliveryBackoff(), config.maxDeliveryBackoff(), config.maxAttempts(), clock, runtime::random);
        schedule.order = runtime.protocolOrder();
        schedule.holdKeysAfterPark(holdKeys);
        this.state = new EngineState(runtime, schedule,
                config.harvest() == DispatcherConfig.Harvest.CURSOR ? new HarvestCursor(MAX_GAPS) : null);
        this.events = new EngineEvents(name, listener, clock, holdKeys);
        Backoff ioBackoff = config.storeRetry();
        StoreWrites writes = new StoreWrites(name, store, ioBackoff, config.maxIoErrorBackoff(), events,
                runtime);
        Fences fences = new Fences(name, state, writes, events);
        this.settle = new SettleLoop(name, config, runtime, store, state, writes, fences, events, ioBackoff,
                broker.capability(PurgeListener.class).orElse(null));
        this.sampler = new OutboxSampler(runtime, store, config.metricsInterval(), state::leading, this::onSample,
                e -> events.failure("sample", e));
        this.leader = new LeaderLoop(name, config, runtime, transport, state, events, ids, lifecycle::get);
        this.sender = new Sender(name, runtime, broker, store, state, events, settle, leader::leaseValid);
        leader.sender(sender);
        this.harvest = new HarvestLoop(name, config, runtime, store, broker, state, writes, events, sender,
                new Latch(runtime), ids, leader::leaseValid, ioBackoff, fences);
        this.housekeeping = !StoreHousekeeping.needed(store) ? null : new StoreHousekeeping(name, store, runtime,
                config.pollInterval(), config.ioErrorBackoff(), state::leading, harvest::rowsAdded, (what, e) -> {
                    log.warn("{}: the store's {} failed; trying again in {}", name, what, config.ioErrorBackoff(), e);
                    events.failure(what, e);
                });
    }

    // ------------------------------------------------------------------------------------------ lifecycle

    @Override
    public void start() {
        if (!lifecycle.compareAndSet(State.NEW, State.RUNNING)) {
            throw new IllegalStateException("dispatcher '" + name + "' was already started (state "
                    + lifecycle.get() + ")");
        }
        log.info("{}: starting with {}", name, config);
        settleThread = newThread("purge", settle);
        harvestThread = newThread("mark", harvest);
        leaderThread = newThread("leader", leader);
        sampleThread = newThread("sample", sampler);
        if (housekeeping != null) {
            housekeepingThread = newThread("housekeeping", housekeeping);
        }
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
        for (EngineRuntime.Worker w : new EngineRuntime.Worker[] {leaderThread, harvestThread, settleThread,
                sampleThread, housekeepingThread}) {
            if (w != null && w.isCurrent()) {
                return true;
            }
        }
        return false;
    }

    private void die(String role, Throwable e) {
        if (lifecycle.get() != State.RUNNING) {
            log.warn("{}: {} thread ended with an error while closing", name, role, e);
            return;
        }
        log.error("{}: {} thread died unexpectedly; closing the dispatcher", name, role, e);
        fatal.compareAndSet(null, e);
        events.health.failed("dispatcher", role + " thread died: " + EngineEvents.describe(e),
                runtime.clock().instant());
        Runnable hook = onDeath;
        runtime.start(name + "-closer", hook == null ? this::close : () -> {
            close();
            hook.run();
        });
    }

    /**
     * Closes in order: stops the harvest, gives up leadership (no send under way once it returns), flushes the
     * broker and waits for what is in flight to settle, up to the drain timeout; then stops settling, lets go of the
     * store's harvest (after the last purge: a stream confirms what was acknowledged before it closes), and ends the
     * leader and sample threads.
     */
    @Override
    public void close() {
        if (lifecycle.compareAndSet(State.NEW, State.CLOSED)) {
            broker.close(config.drainTimeout());
            transport.close();
            closed.open();
            return;
        }
        if (!lifecycle.compareAndSet(State.RUNNING, State.CLOSING)) {
            if (onOwnThread()) {
                return; // a dispatcher thread must not wait for itself
            }
            awaitClosedQuietly();
            return;
        }
        long deadline = runtime.nanoTime() + config.drainTimeout().toNanos();
        log.info("{}: closing; draining for at most {}", name, config.drainTimeout());
        leader.closing();
        harvest.stop();
        sampler.stop();
        if (housekeeping != null) {
            housekeeping.stop();
        }
        join(harvestThread, deadline);
        boolean wasLeading = sender.stopPublishing();
        broker.flush(remaining(deadline));
        boolean drainedAll = state.awaitDrained(deadline);
        broker.close(remaining(deadline).isZero() ? Duration.ofSeconds(1) : remaining(deadline));
        if (!drainedAll) {
            // The broker failed what was pending: let the settle thread record those failures for a while.
            state.awaitDrained(runtime.nanoTime() + config.ioErrorBackoff().toNanos() + TimeUnit.SECONDS.toNanos(1));
        }
        settle.stop();
        settleThread.interrupt();
        join(settleThread, runtime.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        harvest.stopStoreHarvest();
        if (wasLeading) {
            log.info("{}: leadership given up on close", name);
            events.listener("leaderRevoked", DispatcherListener::leaderRevoked);
        }
        leader.stop();
        join(leaderThread, runtime.nanoTime() + config.drainTimeout().toNanos());
        join(sampleThread, runtime.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        if (housekeepingThread != null) {
            join(housekeepingThread, runtime.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        }
        int left = inFlightRecords();
        if (left > 0) {
            log.warn("{}: closed with {} records unacknowledged; they stay in the outbox for the next leader",
                    name, left);
        }
        lifecycle.set(State.CLOSED);
        leader.reportStatus();
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

    // ------------------------------------------------------------------------------------------ reports

    @Override
    public State state() {
        return lifecycle.get();
    }

    @Override
    public boolean isLeader() {
        return state.leading();
    }

    @Override
    public Optional<UUID> leaderId() {
        return Optional.ofNullable(state.leaderId());
    }

    @Override
    public int inFlightRecords() {
        return state.inFlight();
    }

    @Override
    public int inFlightKeys() {
        return inFlightRecords(); // one record per key, by construction
    }

    @Override
    public DispatcherHealth health() {
        return events.health.report(lifecycle.get(), inFlightRecords(), events.callbacks.errors(),
                state.heldRecords(), state.heldKeys());
    }

    /**
     * The engine's scheduling state, for the deterministic simulation's state hashing: leading or not, the epoch,
     * the per-key schedule and the cursor. Read without the lock: only meaningful while every other thread of the
     * dispatcher is stopped, as the simulation's are whenever it asks.
     */
    public String simulationState() {
        return state.toString();
    }

    @Override
    public void addObserver(DispatcherObserver observer) {
        events.callbacks.add(observer);
    }

    @Override
    public void removeObserver(DispatcherObserver observer) {
        events.callbacks.remove(observer);
    }

    private void onSample(OutboxSample sample) {
        if (!state.leading()) {
            return; // leadership ended while the sample was taken: not this instance's figure any more
        }
        events.health.sampled(sample);
        events.callbacks.sampled(sample); // hook: sample
    }
}
