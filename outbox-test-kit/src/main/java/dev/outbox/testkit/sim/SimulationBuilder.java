package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxShards;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;
import dev.outbox.testkit.StoreFaults;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/** Builds a {@link SimulationConfig}. Defaults: 2 keys x 3 records, 2 dispatchers, no faults. Not thread-safe. */
public final class SimulationBuilder {
    int keys = 2;
    int recordsPerKey = 3;
    int dispatchers = 2;
    int sendFailures;
    int duplicateAcks;
    int storeErrors;
    int leaderChanges;
    int rollbacks;
    boolean poison;
    boolean pauseInsideSend;
    boolean storageFencing;
    /** Above the heartbeat timeout, as WalHarvest advises: a live deposed leader lets go by itself first. */
    static final Duration DEFAULT_TAKEOVER = Duration.ofMillis(3000);
    boolean stream;
    Duration takeoverTimeout = DEFAULT_TAKEOVER;
    boolean confirmOnRead;
    boolean lostConfirmations;
    int shards = 1;
    int rebalances;
    int joins;
    boolean forgetShardFilter;
    boolean grantBeforeDrain;
    boolean databaseElection;
    boolean renewalAfterLapse;
    int lateCommits;
    Duration lateCommitFor = Duration.ofMillis(300);
    Set<StoreFaults.Operation> storeErrorOps = EnumSet.of(StoreFaults.Operation.MARK,
            StoreFaults.Operation.READ, StoreFaults.Operation.PURGE, StoreFaults.Operation.RESET,
            StoreFaults.Operation.RETRY_LATER, StoreFaults.Operation.PARK);
    final Set<PlantedBug> bugs = EnumSet.noneOf(PlantedBug.class);
    boolean exactlyOnce;
    final Set<ProgressBug> progressBugs = EnumSet.noneOf(ProgressBug.class);
    DispatcherConfig.Builder engine = DispatcherConfig.builder()
            .pollInterval(Duration.ofMillis(100))
            .markBackoff(Duration.ofMillis(10))
            .heartbeatTimeout(Duration.ofMillis(1000))
            .ioErrorBackoff(Duration.ofMillis(50))
            .maxIoErrorBackoff(Duration.ofMillis(200))
            .drainTimeout(Duration.ofMillis(2000))
            .queueTimeout(Duration.ofSeconds(30))
            .metricsInterval(Duration.ofHours(1))
            .rescanInterval(Duration.ofHours(1))
            .maxAttempts(3)
            .markBatchSize(4)
            .maxInFlightRecords(8)
            .purgeBatchSize(4);
    Duration deliveryTimeout = Duration.ofMillis(500);
    Duration sessionTimeout = Duration.ofMillis(1500);
    Duration idleStep = Duration.ofMillis(50);
    Duration timeLimit = Duration.ofSeconds(20);
    Duration settle = Duration.ofSeconds(5);
    long maxChoices = 200_000;
    long seed;

    /** A builder with the defaults; from {@link Simulation#builder()}. */
    SimulationBuilder() {
    }

    /**
     * The records the writers write: keys {@code k0, k1, ...}, each written in its own transactions, one record
     * per transaction. Default 2 keys x 3 records.
     *
     * @param keys          how many keys, at least 1 (checked by {@link #build()})
     * @param recordsPerKey how many records of each key, at least 1 (checked by {@link #build()})
     * @return this builder
     */
    public SimulationBuilder keys(int keys, int recordsPerKey) {
        this.keys = keys;
        this.recordsPerKey = recordsPerKey;
        return this;
    }

    /**
     * How many dispatchers ({@code d0, d1, ...}) run, all started at the beginning. Default 2.
     *
     * @param n at least 1 (checked by {@link #build()})
     * @return this builder
     */
    public SimulationBuilder dispatchers(int n) {
        this.dispatchers = n;
        return this;
    }

    /**
     * Harvests the {@link InMemoryStore} table with {@code harvest} (and not the commit log, undoing
     * {@link #streamHarvest()}). Default the engine's default.
     *
     * @param harvest the engine's harvest of the table
     * @return this builder
     */
    public SimulationBuilder harvest(DispatcherConfig.Harvest harvest) {
        engine.harvest(harvest);
        stream = false;
        return this;
    }

    /**
     * Harvests a commit log by streaming, as the Postgres store's WAL harvest does: writers' transactions append
     * their messages to an {@link InMemoryCommitLog} when they commit, and each dispatcher's own
     * {@link InMemoryStreamStore} (a {@code CommitLog}) is harvested by the engine's own {@code StreamHarvest},
     * with one replication slot that one stream holds at a time. Store errors become a lost stream (read), and
     * failed, lost or refused ledger appends (which purges make) and parks. Not with {@link #shards} above 1.
     *
     * @return this builder
     */
    public SimulationBuilder streamHarvest() {
        this.stream = true;
        engine.harvest(DispatcherConfig.Harvest.CURSOR);
        return this;
    }

    /**
     * In the stream harvest, how long a new leader lets another process hold the slot before it terminates that
     * process's stream (default 3 s: above the heartbeat timeout, so that a deposed leader that is alive lets go
     * first; a paused one does not).
     *
     * @param timeout virtual time; not {@code null}
     * @return this builder
     * @throws NullPointerException if {@code timeout} is {@code null}
     */
    public SimulationBuilder takeoverTimeout(Duration timeout) {
        this.takeoverTimeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /**
     * In the stream harvest, lets a lost stream lose the confirmation it kept for its next status update, as a
     * connection lost between status updates (or a crashed leader) does; by default a store error loses the
     * stream only after its last status update. A later leader then delivers again what the lost stream's
     * leader had finished since: a re-run, which breaks G2 and G4 (a known gap, see SimulationTest).
     *
     * @param value {@code true} to let a lost stream's unsent confirmation be lost too (a choice of the run)
     * @return this builder
     */
    public SimulationBuilder lostConfirmations(boolean value) {
        this.lostConfirmations = value;
        return this;
    }

    /**
     * A sharded outbox ({@code InMemoryStore.setShards}) harvested by {@code ShardedDispatcher}s (one per
     * dispatcher, each running one engine per shard and the shard poller) over a simulated shard group
     * ({@link SimShardedLeaderGroup}: Kafka's coordinator over a leader topic with a partition per shard). The
     * dispatchers join at the start, and the group spreads the shards over them by orderly moves. G3 is checked
     * per shard, G4 against the faults of the record's own shard (and the store's and broker's). 1: unsharded.
     *
     * @param n the shard count, from 1 to {@link OutboxShards#MAX_SHARDS}; above 1 not with
     *          {@link #streamHarvest()} (checked by {@link #build()})
     * @return this builder
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    public SimulationBuilder shards(int n) {
        this.shards = OutboxShards.checkCount(n);
        return this;
    }

    /**
     * With {@link #shards}, how many leadership faults the environment may inject at points it chooses: an
     * orderly move of a shard to another dispatcher, a dispatcher joining (up to {@link #joins}) or leaving, a
     * dispatcher cut off from the group or paused past its session (its shards are taken from it, and it rejoins
     * later), a shard's heartbeats stalling (its leader fences itself, and leads again when they return).
     *
     * @param n the budget of such faults per run; 0 (the default) for none
     * @return this builder
     */
    public SimulationBuilder rebalances(int n) {
        this.rebalances = n;
        return this;
    }

    /**
     * With {@link #shards}, how many new dispatchers may join the group during a run.
     *
     * @param n the most dispatchers that may join, each costing one of the {@link #rebalances}; 0 by default
     * @return this builder
     */
    public SimulationBuilder joins(int n) {
        this.joins = n;
        return this;
    }

    /**
     * Plants a sharding bug in the store (not in the engine): each shard view forgets its shard and is the whole
     * outbox, so that every shard's leader harvests every shard's rows.
     *
     * @return this builder
     */
    public SimulationBuilder plantForgottenShardFilter() {
        this.forgetShardFilter = true;
        return this;
    }

    /**
     * Plants a sharding bug in the group (the transport, not the engine): an orderly revocation does not wait for
     * the old owner's drain; the shard is granted to its next owner as soon as the old one is told.
     *
     * @return this builder
     */
    public SimulationBuilder plantGrantBeforeDrain() {
        this.grantBeforeDrain = true;
        return this;
    }

    /**
     * Elects the leader in the database instead of in a Kafka-like group: a lease table under the simulation's
     * clock, with {@code outbox-store-sql}'s {@code SqlLeaderTransport} modeled step for step per dispatcher
     * ({@link SimLeaseTransport}). Standbys take the lease once it lapsed; taking it increments the store's
     * leader epoch in the same step (with {@link #storageFencing}). The {@link #leaderChanges} become the lease
     * holder's faults: its dispatcher closing (a clean hand-over), a cut from the database (its lease statements
     * fail until its lease lapsed and a standby took it), a pause of the whole process past its lease. The lease
     * is the shortest the SQL transport accepts: heartbeat timeout + delivery timeout + renew interval. With
     * {@link #shards} above 1, a lease per shard, each dispatcher through {@link SimShardedLeaseTransport}
     * ({@code SqlShardedLeaderTransport}'s balancing), and the {@link #rebalances} become a dispatcher joining or
     * leaving, or one holding leases cut off from the database or paused past its leases.
     *
     * @return this builder
     */
    public SimulationBuilder databaseElection() {
        this.databaseElection = true;
        return this;
    }

    /**
     * Plants a bug in the database's lease (with {@link #databaseElection()}): a renewal takes no notice of the
     * lease having lapsed — it extends the row as the renewer's whether or not the lease expired and another
     * instance took it meanwhile — so a leader paused past its lease renews it when it wakes and carries on
     * leading, instead of finding it lost and stepping down (a later acquisition would bump the epoch).
     *
     * @return this builder
     */
    public SimulationBuilder plantRenewalAfterLapse() {
        this.renewalAfterLapse = true;
        return this;
    }

    /**
     * Plants a bug in the stream harvest's in-memory stream (not in the engine, not in {@code StreamHarvest}):
     * every poll confirms the stream up to the last message it returned, before the engine has finished it.
     *
     * @return this builder
     */
    public SimulationBuilder plantConfirmOnRead() {
        this.confirmOnRead = true;
        return this;
    }

    /**
     * How many sends the broker may fail retriably, at points the run chooses. Default 0.
     *
     * @param n the budget per run
     * @return this builder
     */
    public SimulationBuilder sendFailures(int n) {
        this.sendFailures = n;
        return this;
    }

    /**
     * How many sends the broker may append to its log and then report failed (a lost acknowledgement: the
     * retry is a legitimate duplicate). Default 0.
     *
     * @param n the budget per run
     * @return this builder
     */
    public SimulationBuilder lostAcks(int n) {
        this.duplicateAcks = n;
        return this;
    }

    /**
     * How many store calls of the harvest may fail, while rows wait: before their change, after it (a lost
     * answer), or, for writes, refused for good; in the stream harvest a failed read loses the stream. Default
     * 0.
     *
     * @param n the budget per run
     * @return this builder
     */
    public SimulationBuilder storeErrors(int n) {
        this.storeErrors = n;
        return this;
    }

    /**
     * Makes the first {@code n} transactions of key k0 commit late even on the happy path: after every other
     * key's writes, and no sooner than 300 ms after they began (any schedule may still commit them earlier or
     * later).
     *
     * @param n how many of k0's transactions commit late; 0 by default
     * @return this builder
     */
    public SimulationBuilder lateCommits(int n) {
        this.lateCommits = n;
        return this;
    }

    /**
     * As {@link #lateCommits(int)}, no sooner than {@code after} (instead of 300 ms) after they began: a commit
     * that comes after a leader's lease lapsed, say.
     *
     * @param n     how many of k0's transactions commit late
     * @param after the least time, virtual, from a late transaction's start to its commit on the happy path;
     *              not {@code null}
     * @return this builder
     * @throws NullPointerException if {@code after} is {@code null}
     */
    public SimulationBuilder lateCommits(int n, Duration after) {
        this.lateCommitFor = Objects.requireNonNull(after, "after");
        return lateCommits(n);
    }

    /**
     * Store errors only on these operations (by default any write or read of the harvest).
     *
     * @param n     the budget per run, as {@link #storeErrors(int)}
     * @param first an operation that may fail; only MARK, READ, PURGE, RESET, RETRY_LATER and PARK ever do
     * @param more  more of them
     * @return this builder
     */
    public SimulationBuilder storeErrors(int n, StoreFaults.Operation first, StoreFaults.Operation... more) {
        this.storeErrors = n;
        this.storeErrorOps = EnumSet.of(first, more);
        return this;
    }

    /**
     * Storage fencing in the table store ({@code InMemoryStore.setFencing}): each leadership takes an epoch, and
     * a deposed leader's purges, failure records, parks and marks are refused (the engine then stands down).
     *
     * @param value {@code true} for a fencing store; {@code false} (the default) for none
     * @return this builder
     */
    public SimulationBuilder storageFencing(boolean value) {
        this.storageFencing = value;
        return this;
    }

    /**
     * Lets a pause fall between the engine's lease check and its send, as a real JVM pause can: the window
     * that only broker-side fencing closes.
     *
     * @param value {@code true} to add that pause point; {@code false} by default
     * @return this builder
     */
    public SimulationBuilder pauseInsideSend(boolean value) {
        this.pauseInsideSend = value;
        return this;
    }

    /**
     * How many times the leader may lose the group, while a send is under way or rows wait: an orderly
     * revocation, a partition (its heartbeats are lost until its session expires), or a pause of the whole
     * process past its session. Default 0.
     *
     * @param n the budget per run
     * @return this builder
     */
    public SimulationBuilder leaderChanges(int n) {
        this.leaderChanges = n;
        return this;
    }

    /**
     * How many writers' transactions may roll back instead of committing. Default 0.
     *
     * @param n the budget per run
     * @return this builder
     */
    public SimulationBuilder rollbacks(int n) {
        this.rollbacks = n;
        return this;
    }

    /**
     * Whether the first record of key k1 is poison: sent to a topic the broker refuses for good, so that it
     * must be parked (G6). Needs at least 2 keys.
     *
     * @param poison {@code true} for a poison record; {@code false} by default
     * @return this builder
     */
    public SimulationBuilder poison(boolean poison) {
        this.poison = poison;
        return this;
    }

    /**
     * Plants a bug in the engine, for tests that prove the simulation finds it.
     *
     * @param bug one of the engine's planted bugs (an implementation enum, which may change between
     *            releases); several may be planted
     * @return this builder
     */
    public SimulationBuilder plant(PlantedBug bug) {
        bugs.add(bug);
        return this;
    }

    /**
     * Publishes exactly once: each dispatcher sends through a producer of one transactional id in a simulated
     * transactional broker with a progress record ({@link SimTransactionalBroker}); {@link #sendFailures} become
     * aborted commits and {@link #lostAcks} commits whose answer is lost. A record committed twice breaks G4.
     * Only with the table harvest, unsharded (checked by {@link #build()}).
     *
     * @return this builder
     */
    public SimulationBuilder exactlyOnce() {
        this.exactlyOnce = true;
        return this;
    }

    /**
     * Plants a bug in the progress record of {@link #exactlyOnce()}'s broker, for tests that prove the simulation
     * finds it.
     *
     * @param bug the bug to plant; several may be planted
     * @return this builder
     */
    public SimulationBuilder plant(ProgressBug bug) {
        progressBugs.add(Objects.requireNonNull(bug, "bug"));
        return this;
    }

    /**
     * Changes the engine's configuration, which starts from short timings suited to the simulation (100 ms
     * poll interval, 1 s heartbeat timeout, 2 s drain timeout, small batches).
     *
     * @param change given the configuration's builder, returns it (or another) changed; called at once. The
     *               heartbeat timeout must stay below 1.5 s (the group's session timeout) and the drain timeout
     *               above 500 ms (the broker's delivery timeout), checked by {@link #build()}.
     * @return this builder
     */
    public SimulationBuilder engine(java.util.function.UnaryOperator<DispatcherConfig.Builder> change) {
        engine = change.apply(engine);
        return this;
    }

    /**
     * How many choices a run may make before it ends unfinished (a violation). Default 200,000.
     *
     * @param n the limit per run
     * @return this builder
     */
    public SimulationBuilder maxChoices(long n) {
        this.maxChoices = n;
        return this;
    }

    /**
     * Seeds the engine's randomness (backoff jitter, ids); the choices come from the {@link Chooser}.
     * Default 0.
     *
     * @param seed the seed
     * @return this builder
     */
    public SimulationBuilder seed(long seed) {
        this.seed = seed;
        return this;
    }

    /**
     * Checks and builds the configuration.
     *
     * @return a new immutable configuration
     * @throws IllegalArgumentException if keys, records per key or dispatchers are not positive, shards above 1
     *                                  are combined with the stream harvest, a lease
     *                                  bug is planted without the database election, or the engine's timeouts
     *                                  break the simulation's timing assumptions (see {@link Simulation})
     */
    public SimulationConfig build() {
        if (keys < 1 || recordsPerKey < 1 || dispatchers < 1) {
            throw new IllegalArgumentException("keys, records per key and dispatchers must be positive");
        }
        if (shards > 1 && stream) {
            throw new IllegalArgumentException("the stream harvest is not sharded: shards " + shards);
        }
        if (exactlyOnce && (stream || shards > 1) || !progressBugs.isEmpty() && !exactlyOnce) {
            throw new IllegalArgumentException("exactly-once (and its planted bugs " + progressBugs + ") needs the"
                    + " table harvest, unsharded: stream " + stream + ", shards " + shards + ", exactly-once "
                    + exactlyOnce);
        }
        if (renewalAfterLapse && !databaseElection) {
            throw new IllegalArgumentException("a lease renewed after it lapsed needs the database election");
        }
        return new SimulationConfig(this);
    }
}
