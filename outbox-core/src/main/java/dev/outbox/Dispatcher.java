package dev.outbox;

import dev.outbox.internal.DefaultDispatcher;
import dev.outbox.internal.EngineRuntime;
import dev.outbox.internal.ShardedDispatcher;
import dev.outbox.internal.SingleInstanceTransport;
import dev.outbox.internal.StreamStore;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.Store;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * Harvests the outbox: while this instance is the leader, marks the oldest rows, publishes them to the broker
 * and purges them once acknowledged (the mark–purge algorithm; a failed delivery is retried with backoff holding
 * only its own key). Guarantees: every committed row is
 * published at least once, records of one key are published in order, at most one instance publishes at a
 * time, duplicates only around failures, and a record that can never be published is parked, not dropped.
 *
 * <pre>{@code
 * Dispatcher dispatcher = Dispatcher.builder(store, broker)
 *         .leaderTransport(transport)   // omit for a single instance
 *         .listener(listener)
 *         .build();
 * dispatcher.start();
 * ...
 * dispatcher.close();                   // drains in-flight records, flushes, stops every thread
 * }</pre>
 *
 * <p>Thread-safe. The dispatcher owns the broker and the leader transport and closes them; it does not own
 * the store, which the application's publishers share.
 */
public interface Dispatcher extends AutoCloseable {

    /** The dispatcher's life: NEW → RUNNING → CLOSING → CLOSED. */
    enum State {
        /** Built, not started yet. */
        NEW,
        /** Started: electing a leader, and harvesting while it leads. */
        RUNNING,
        /** {@link #close()} is draining in-flight records and stopping the threads. */
        CLOSING,
        /** Closed: no thread of the dispatcher is alive; it cannot be started again. */
        CLOSED
    }

    /**
     * Starts a builder for a dispatcher harvesting {@code store} into {@code broker}.
     *
     * @param store  the outbox to harvest; not null; not closed by the dispatcher
     * @param broker where records are published; not null; owned and closed by the dispatcher
     * @return a new builder with the defaults
     * @throws NullPointerException if {@code store} or {@code broker} is null
     */
    static Builder builder(Store store, MessageBroker broker) {
        return new Builder(store, broker);
    }

    /**
     * Starts the dispatcher's threads and joins leader election.
     *
     * @throws IllegalStateException if already started
     */
    void start();

    /**
     * Stops marking, waits at most {@code drainTimeout} for in-flight records to be acknowledged and purged,
     * then closes the broker and the leader transport. When it returns, no thread of the dispatcher is alive.
     * Idempotent; records not acknowledged stay in the outbox for the next leader.
     */
    @Override
    void close();

    /**
     * Blocks until the dispatcher is closed.
     *
     * @throws InterruptedException if the calling thread is interrupted while waiting; the dispatcher runs on
     * @throws OutboxException      if one of its threads died of an unexpected error (the dispatcher then closes
     *                              itself)
     */
    void await() throws InterruptedException;

    /**
     * Where the dispatcher is in its life.
     *
     * @return the current state; never null
     */
    State state();

    /**
     * Whether this instance currently leads and may publish.
     *
     * @return true while leading (for a sharded outbox: while leading at least one shard)
     */
    boolean isLeader();

    /**
     * The current leader id while leading.
     *
     * @return this instance's leader id for its current leadership (for a sharded outbox: that of the lowest shard
     *         it leads), or empty while it does not lead
     */
    Optional<UUID> leaderId();

    /**
     * Records sent to the broker and not yet completed.
     *
     * @return the count, 0 or more; a momentary value
     */
    int inFlightRecords();

    /**
     * Keys with a record in flight (at most one record per key is ever in flight).
     *
     * @return the count, 0 or more; a momentary value
     */
    int inFlightKeys();

    /**
     * A snapshot of this dispatcher's health: status (starting, leader, standby, fenced, closed), leader id,
     * last successful mark and purge, last failure, and the lag as last sampled by the leader. Cheap (no I/O)
     * and safe to call from any thread at any rate, for example by a health endpoint.
     *
     * @return the snapshot; never null
     */
    DispatcherHealth health();

    /**
     * The health of each shard this dispatcher harvests, by shard index ({@link dev.outbox.spi.Sharding#shards}):
     * for an unsharded outbox, the one {@link #health()}. For a sharded one, {@link #health()} folds these into
     * one (LEADER if this instance leads any shard).
     *
     * @return one snapshot per shard, in shard order; never empty
     */
    default List<DispatcherHealth> shardHealth() {
        return List.of(health());
    }

    /**
     * Registers an observer of the engine's measurements (see {@link DispatcherObserver}); it receives events
     * from the next one on. Safe to call from any thread, before or after {@link #start()}. Adding the same
     * instance twice registers it once.
     *
     * @param observer the observer; not null. Its methods run on the engine's threads and must be quick
     */
    void addObserver(DispatcherObserver observer);

    /**
     * Unregisters an observer; it may still receive an event already under way. Unknown observers are ignored.
     *
     * @param observer the observer to remove
     */
    void removeObserver(DispatcherObserver observer);

    /** Builds a {@link Dispatcher}; not thread-safe. */
    final class Builder {
        private final Store store;
        private final MessageBroker broker;
        private DispatcherConfig config = DispatcherConfig.defaults();
        private LeaderTransport transport;
        private ShardedLeaderTransport shardedTransport;
        private DispatcherListener listener = new DispatcherListener() { };
        private final List<DispatcherObserver> observers = new ArrayList<>();
        private Clock clock = Clock.systemUTC();
        private String name = "outbox";

        private Builder(Store store, MessageBroker broker) {
            this.store = Objects.requireNonNull(store, "store");
            this.broker = Objects.requireNonNull(broker, "broker");
        }

        /**
         * Limits and timings; {@link DispatcherConfig#defaults()} if not set.
         *
         * @param config the configuration; not null
         * @return this builder
         * @throws NullPointerException if {@code config} is null
         */
        public Builder config(DispatcherConfig config) {
            this.config = Objects.requireNonNull(config, "config");
            return this;
        }

        /**
         * The transport NELI leader election runs over, for example a Kafka consumer group. If not set, this
         * instance is always the leader: use that only when exactly one dispatcher harvests the outbox.
         *
         * @param transport the transport; not null; owned and closed by the dispatcher
         * @return this builder
         * @throws NullPointerException if {@code transport} is null
         */
        public Builder leaderTransport(LeaderTransport transport) {
            this.transport = Objects.requireNonNull(transport, "transport");
            return this;
        }

        /**
         * The transport a sharded outbox's leader elections run over, one channel per shard (for example a Kafka
         * consumer group over a leader topic with one partition per shard): its shard count must equal the store's
         * ({@link dev.outbox.spi.Sharding#shards}). If a sharded outbox has no transport, this instance leads every shard: use that
         * only when exactly one dispatcher harvests the outbox.
         *
         * @param transport the transport; not null; owned and closed by the dispatcher
         * @return this builder
         * @throws NullPointerException if {@code transport} is null
         */
        public Builder leaderTransport(ShardedLeaderTransport transport) {
            this.shardedTransport = Objects.requireNonNull(transport, "transport");
            return this;
        }

        /**
         * Receives the dispatcher's events (leadership, failures, parked records, meter readings); by default one
         * that ignores them all. Setting it again replaces the previous one.
         *
         * @param listener the listener; not null. Its methods run on the engine's threads and must be quick
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder listener(DispatcherListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Adds an observer of the engine's measurements; see {@link Dispatcher#addObserver}.
         *
         * @param observer the observer; not null
         * @return this builder
         * @throws NullPointerException if {@code observer} is null
         */
        public Builder observer(DispatcherObserver observer) {
            observers.add(Objects.requireNonNull(observer, "observer"));
            return this;
        }

        /**
         * The clock heartbeat deadlines and meters are measured with; the system clock by default.
         *
         * @param clock the clock; not null
         * @return this builder
         * @throws NullPointerException if {@code clock} is null
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Names the dispatcher's threads ({@code <name>-mark}, …) and log lines; "outbox" by default.
         *
         * @param name the name; not null or blank
         * @return this builder
         * @throws IllegalArgumentException if {@code name} is null or blank
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("name must not be blank: '" + name + "'");
            }
            this.name = name;
            return this;
        }

        /**
         * Builds the dispatcher: one harvest for an unsharded store, one per shard for a sharded one.
         *
         * @throws IllegalArgumentException if the harvest mode does not suit the store, if a sharded store was
         *                                  given an unsharded transport, or the shard counts differ (naming both),
         *                                  or both a {@link LeaderTransport} and a {@link ShardedLeaderTransport}
         *                                  were set
         * @return a new dispatcher in state {@link State#NEW NEW}; {@link Dispatcher#start()} starts it
         */

        public Dispatcher build() {
            if (transport != null && shardedTransport != null) {
                throw new IllegalArgumentException("set either a LeaderTransport or a ShardedLeaderTransport, not both");
            }
            // A store that is a commit log is harvested through the engine's stream harvest, a cursor read.
            Store store = StreamStore.of(this.store);
            int shards = Sharding.of(store);
            if (shards > 1 && transport != null) {
                throw new IllegalArgumentException("the store " + store + " has " + shards + " shards: give the"
                        + " builder a ShardedLeaderTransport with " + shards + " shards, not " + transport);
            }
            if (shardedTransport != null && shardedTransport.shards() != shards) {
                throw new IllegalArgumentException("the leader transport has " + shardedTransport.shards()
                        + " shards but the store " + store + " has " + shards + ": they must be equal");
            }
            if (config.harvest() == DispatcherConfig.Harvest.CURSOR && store.capability(CursorHarvest.class).isEmpty()) {
                throw new IllegalArgumentException("harvest CURSOR needs a store with a cursor read (CursorHarvest) or"
                        + " a commit log (CommitLog), which " + store.getClass().getName() + " has not: set"
                        + " DispatcherConfig.harvest(MARK)");
            }
            if (config.harvest() == DispatcherConfig.Harvest.MARK && store.capability(MarkHarvest.class).isEmpty()) {
                throw new IllegalArgumentException("harvest MARK needs a store that marks rows (MarkHarvest), which "
                        + store + " does not: leave DispatcherConfig.harvest at CURSOR");
            }
            if (shards > 1 || shardedTransport != null) {
                ShardedDispatcher d = new ShardedDispatcher(name, store, broker, shardedTransport, config, listener,
                        EngineRuntime.system(clock));
                observers.forEach(d::addObserver);
                return d;
            }
            LeaderTransport t = transport != null ? transport : new SingleInstanceTransport();
            DefaultDispatcher d = new DefaultDispatcher(name, store, broker, t, config, listener, clock);
            observers.forEach(d::addObserver);
            return d;
        }
    }
}
