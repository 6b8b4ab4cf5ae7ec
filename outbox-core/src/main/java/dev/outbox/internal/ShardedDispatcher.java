package dev.outbox.internal;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxException;
import dev.outbox.OutboxSample;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A sharded outbox's dispatcher: one {@link DefaultDispatcher} per shard, each harvesting its shard
 * ({@link dev.outbox.spi.Sharding#shard}) under its own NELI timeline, over a view of the one {@link ShardedLeaderTransport}
 * ({@link ShardChannels}), and sending through the broker's {@link MessageBroker#forShard} (by default the one
 * broker, shared). A shard this instance is not given
 * stands by, holding no connection; a shard it leads runs the unsharded engine unchanged, with its four threads,
 * so one slow or failing shard never holds another.
 *
 * <p>When a shard's thread dies, the whole dispatcher closes (it leaves the group, so that the other instances
 * take all of its shards over), and {@link #await()} reports the error.
 */
public final class ShardedDispatcher implements Dispatcher {
    private static final Logger log = LoggerFactory.getLogger(ShardedDispatcher.class);

    private final String name;
    private final MessageBroker broker;
    private final ShardedLeaderTransport transport;
    private final ShardChannels channels;
    private final EngineRuntime runtime;
    private final DispatcherConfig config;
    private final List<DefaultDispatcher> shards = new ArrayList<>();
    private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
    private final Latch closed;
    private EngineRuntime.Worker poller;
    /** The error the shard poller died of (the transport refused to start, say), if it did. */
    private volatile Throwable pollerError;

    /**
     * @param transport the shards' leader transport, or null when this is the only dispatcher (it leads every
     *                  shard)
     */
    public ShardedDispatcher(String name, Store store, MessageBroker broker, ShardedLeaderTransport transport,
                             DispatcherConfig config, DispatcherListener listener, EngineRuntime runtime) {
        Sharding sharding = Store.require(store, Sharding.class, "a sharded dispatcher");
        int count = sharding.shards();
        if (transport != null && transport.shards() != count) {
            throw new IllegalArgumentException("the leader transport has " + transport.shards() + " shards but the"
                    + " store " + store + " has " + count + ": they must be equal");
        }
        this.name = name;
        this.broker = broker;
        this.transport = transport;
        this.runtime = runtime;
        this.config = config;
        this.closed = new Latch(runtime);
        this.channels = transport == null ? null : new ShardChannels(name, transport, runtime,
                config.drainTimeout().plusSeconds(5), config.ioErrorBackoff());
        for (int i = 0; i < count; i++) {
            LeaderTransport t = channels == null ? new SingleInstanceTransport() : channels.shard(i);
            DefaultDispatcher d = new DefaultDispatcher(name + "-s" + i, sharding.shard(i), broker.forShard(i), t, config,
                    listener, runtime);
            d.onDeath(this::closeAfterDeath);
            shards.add(d);
        }
    }

    /** The dispatcher of each shard, by shard index; for tests and the simulation. */
    public List<DefaultDispatcher> shardDispatchers() {
        return Collections.unmodifiableList(shards);
    }

    @Override
    public void start() {
        if (!state.compareAndSet(State.NEW, State.RUNNING)) {
            throw new IllegalStateException("dispatcher '" + name + "' was already started (state " + state.get()
                    + ")");
        }
        log.info("{}: starting {} shards", name, shards.size());
        shards.forEach(DefaultDispatcher::start);
        if (channels != null) {
            poller = runtime.start(name + "-shards", () -> {
                try {
                    channels.run();
                } catch (Throwable e) {
                    log.error("{}: the shard poller died; closing the dispatcher", name, e);
                    pollerError = e;
                    runtime.start(name + "-closer", this::close);
                }
            });
        }
    }

    private void closeAfterDeath() {
        log.error("{}: a shard's dispatcher died; closing every shard so that other instances take them over",
                name);
        close();
    }

    @Override
    public void close() {
        if (state.compareAndSet(State.NEW, State.CLOSED)) {
            shards.forEach(DefaultDispatcher::close);
            closeShared();
            closed.open();
            return;
        }
        if (!state.compareAndSet(State.RUNNING, State.CLOSING)) {
            try {
                if (!ownsCurrentThread()) {
                    closed.await();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return;
        }
        // Every shard drains at once: closing them one after the other would multiply the drain timeout.
        List<EngineRuntime.Worker> closers = new ArrayList<>();
        for (DefaultDispatcher d : shards) {
            closers.add(runtime.start(name + "-close-" + closers.size(), d::close));
        }
        long deadline = runtime.nanoTime() + config.drainTimeout().toNanos() + TimeUnit.SECONDS.toNanos(10);
        for (EngineRuntime.Worker w : closers) {
            try {
                w.join(Math.max(1, deadline - runtime.nanoTime()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (channels != null) {
            channels.stop();
            try {
                if (!poller.join(TimeUnit.SECONDS.toNanos(10))) {
                    poller.interrupt();
                    poller.join(TimeUnit.SECONDS.toNanos(5));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        closeShared();
        state.set(State.CLOSED);
        closed.open();
        log.info("{}: closed", name);
    }

    private boolean ownsCurrentThread() {
        return poller != null && poller.isCurrent();
    }

    private void closeShared() {
        if (transport != null) {
            try {
                transport.close();
            } catch (RuntimeException e) {
                log.warn("{}: closing the shard leader transport failed", name, e);
            }
        }
        broker.close(Duration.ofSeconds(5));
    }

    @Override
    public void await() throws InterruptedException {
        closed.await();
        if (pollerError != null) {
            throw new OutboxException("dispatcher '" + name + "' stopped: its shard leader transport failed",
                    pollerError);
        }
        for (DefaultDispatcher d : shards) {
            Throwable e = d.fatalError();
            if (e != null) {
                throw new OutboxException("dispatcher '" + name + "' stopped after an unexpected error", e);
            }
        }
    }

    @Override
    public State state() {
        return state.get();
    }

    /** Whether this instance leads at least one shard. */
    @Override
    public boolean isLeader() {
        return shards.stream().anyMatch(DefaultDispatcher::isLeader);
    }

    /** The leader id of the lowest shard this instance leads; see {@link #shardHealth()} for each. */
    @Override
    public Optional<UUID> leaderId() {
        for (DefaultDispatcher d : shards) {
            Optional<UUID> id = d.leaderId();
            if (id.isPresent()) {
                return id;
            }
        }
        return Optional.empty();
    }

    @Override
    public int inFlightRecords() {
        return shards.stream().mapToInt(DefaultDispatcher::inFlightRecords).sum();
    }

    @Override
    public int inFlightKeys() {
        return shards.stream().mapToInt(DefaultDispatcher::inFlightKeys).sum();
    }

    @Override
    public List<DispatcherHealth> shardHealth() {
        return shards.stream().map(DefaultDispatcher::health).toList();
    }

    /**
     * The shards' health folded into one: LEADER if this instance leads any shard (with the lowest such shard's
     * leader id), else FENCED if one is fenced, else STARTING if one still starts, else STANDBY; counts are summed,
     * times are the latest (the earliest outage). The sample covers the shards this instance leads: their backlogs
     * summed, and the time and head of the one with the greatest lag (shards led elsewhere are sampled there).
     */
    @Override
    public DispatcherHealth health() {
        List<DispatcherHealth> all = shardHealth();
        State s = state.get();
        DispatcherHealth.Status status;
        if (s == State.CLOSING || s == State.CLOSED) {
            status = DispatcherHealth.Status.CLOSED;
        } else if (any(all, DispatcherHealth.Status.LEADER)) {
            status = DispatcherHealth.Status.LEADER;
        } else if (any(all, DispatcherHealth.Status.FENCED)) {
            status = DispatcherHealth.Status.FENCED;
        } else if (s == State.NEW || any(all, DispatcherHealth.Status.STARTING)) {
            status = DispatcherHealth.Status.STARTING;
        } else {
            status = DispatcherHealth.Status.STANDBY;
        }
        DispatcherHealth.Builder b = DispatcherHealth.builder(status);
        List<DispatcherHealth> leading = all.stream().filter(h -> h.status() == DispatcherHealth.Status.LEADER)
                .toList();
        if (status == DispatcherHealth.Status.LEADER) {
            b.leaderId(leading.get(0).leaderId().orElseThrow());
            List<OutboxSample> samples = leading.stream().flatMap(h -> h.lastSample().stream()).toList();
            samples.stream().max(Comparator.comparing(OutboxSample::lag)).ifPresent(worst -> b.lastSample(
                    new OutboxSample(worst.at(), samples.stream().mapToLong(OutboxSample::backlog).sum(),
                            samples.stream().mapToLong(OutboxSample::parked).max().orElse(0),
                            worst.oldestCreateTime(), -1)));
            leading.stream().flatMap(h -> h.outageSince().stream()).min(Comparator.naturalOrder())
                    .ifPresent(b::outageSince);
        }
        all.stream().flatMap(h -> h.lastMark().stream()).max(Comparator.naturalOrder()).ifPresent(b::lastMark);
        all.stream().flatMap(h -> h.lastPurge().stream()).max(Comparator.naturalOrder()).ifPresent(b::lastPurge);
        all.stream().flatMap(h -> h.lastFailure().stream()).max(Comparator.comparing(DispatcherHealth.Failure::at))
                .ifPresent(b::lastFailure);
        b.inFlightRecords(all.stream().mapToInt(DispatcherHealth::inFlightRecords).sum());
        b.callbackErrors(all.stream().mapToLong(DispatcherHealth::callbackErrors).sum());
        b.heldRecords(all.stream().mapToInt(DispatcherHealth::heldRecords).sum());
        // Every shard's leader holds the whole outbox's parked keys (Store.parkedKeys): the most, not the sum.
        b.heldKeys(all.stream().mapToInt(DispatcherHealth::heldKeys).max().orElse(0));
        return b.build();
    }

    private static boolean any(List<DispatcherHealth> all, DispatcherHealth.Status status) {
        return all.stream().anyMatch(h -> h.status() == status);
    }

    /** Observes every shard (the events do not say which); see {@link DefaultDispatcher#addObserver}. */
    @Override
    public void addObserver(DispatcherObserver observer) {
        shards.forEach(d -> d.addObserver(observer));
    }

    @Override
    public void removeObserver(DispatcherObserver observer) {
        shards.forEach(d -> d.removeObserver(observer));
    }

    @Override
    public String toString() {
        return "ShardedDispatcher{" + name + ", shards=" + shards.size() + ", state=" + state.get() + '}';
    }
}
