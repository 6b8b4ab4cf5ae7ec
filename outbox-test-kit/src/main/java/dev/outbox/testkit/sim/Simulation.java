package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.OutboxShards;
import dev.outbox.internal.DefaultDispatcher;
import dev.outbox.internal.StreamStore;
import dev.outbox.internal.ShardedDispatcher;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.Store;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;
import dev.outbox.testkit.StoreFaults;
import dev.outbox.testkit.TestTransaction;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;

/**
 * One configuration of the deterministic simulation: the real engine ({@link DefaultDispatcher}, one per
 * dispatcher) over an {@link InMemoryStore} (or, with {@link SimulationBuilder#streamHarvest()}, an
 * {@link InMemoryCommitLog} that each dispatcher streams through its own {@link InMemoryStreamStore}), a simulated
 * broker and leader group, all on one {@link SimScheduler} (or, with {@link SimulationBuilder#databaseElection()}, a
 * lease table in the database in place of the group), and an environment that writes records in transactions that
 * commit late or roll back, acknowledges or fails sends, and injects faults — every step of it a choice.
 * {@link #run(Chooser)} plays one run and checks the
 * guarantees after every step and at the end:
 * <ul>
 *   <li>G1: every committed record reaches the broker (or, if it is poison, is parked); no rolled-back one does;</li>
 *   <li>G2: per key, the broker's sequence never goes backwards (a repeat of the latest record is allowed);</li>
 *   <li>G3: no dispatcher sends after another acquired leadership later than it did;</li>
 *   <li>G4: a record reaches the broker twice only if a fault or a change of leader happened while it was in
 *       flight; with {@link SimulationBuilder#exactlyOnce()}, never;</li>
 *   <li>G6: a poison record is parked, and its key's later records and every other key are still delivered.</li>
 * </ul>
 * The environment's timing assumptions, as in production: the broker answers every send within
 * {@code deliveryTimeout}, which is shorter than a dispatcher's drain timeout and than the group's session
 * timeout, after which a paused or partitioned leader's partition goes to another member; the heartbeat timeout
 * (the lease) is shorter than the session timeout. Immutable; thread-safe.
 */
public final class Simulation {
    private static final long MS = 1_000_000L;
    static final String POISON_TOPIC = "poison";
    /** The environment's turns within which the first fault may come. */
    private static final int FAULT_DELAY_TURNS = 24;

    private final SimulationConfig config;

    /**
     * A simulation of {@code config}.
     *
     * @param config the configuration, from {@link #builder()}; not {@code null}
     * @throws NullPointerException if {@code config} is {@code null}
     */
    public Simulation(SimulationConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * The configuration every run plays.
     *
     * @return the configuration given to the constructor
     */
    public SimulationConfig config() {
        return config;
    }

    /**
     * Plays one run with {@code chooser}'s choices.
     *
     * @param chooser makes every choice of the run; a fresh one per run (it records the choices made)
     * @return what the run did and the guarantees it broke
     */
    public Outcome run(Chooser chooser) {
        return run(chooser, null);
    }

    /**
     * Plays one run; {@code onChoice}, if given, sees a fingerprint of the state before every choice (the
     * exhaustive explorer's state hashing).
     *
     * @param chooser  makes every choice of the run; a fresh one per run (it records the choices made)
     * @param onChoice called on the run's worker thread before each choice with a text that is equal for equal
     *                 states (the choice's label included); {@code null} for none, which also runs faster (no
     *                 worker locations are tracked)
     * @return what the run did and the guarantees it broke
     */
    public Outcome run(Chooser chooser, Consumer<String> onChoice) {
        SimScheduler sched = new SimScheduler(chooser, config.seed, config.bugs, config.maxChoices,
                config.timeLimit.toNanos());
        Run run = new Run(sched);
        if (onChoice != null) {
            sched.trackLocations();
            // The choice's own subject is part of the state: two choices in a row (which worker runs, then whether
            // the store call it makes fails) must not pass for one state visited twice.
            sched.beforeEveryChoice(label -> onChoice.accept(label + "|" + run.fingerprint()));
        }
        String ended = sched.run(run::main);
        if (ended != null) {
            run.violation("the run did not finish: " + ended);
        }
        if (sched.uncaught() != null) {
            java.io.StringWriter w = new java.io.StringWriter();
            sched.uncaught().printStackTrace(new java.io.PrintWriter(w));
            run.violation("a worker threw " + w.toString().lines().limit(8)
                    .collect(java.util.stream.Collectors.joining("\n    ")));
        }
        if (run.violations.isEmpty()) {
            run.checkEnd();
        }
        return new Outcome(chooser.made(), chooser.options(), List.copyOf(run.trace), List.copyOf(run.violations),
                sched.choices());
    }

    // ------------------------------------------------------------------------------------------ one run

    private final class Run {
        final SimScheduler sched;
        final List<String> trace = new ArrayList<>();
        final List<String> violations = new ArrayList<>();
        /** The table store (table harvests), or null. */
        InMemoryStore store;
        /** The commit log (stream harvest), or null; then each dispatcher has its own store on it. */
        InMemoryCommitLog commitLog;
        final List<StreamStore> streamStores = new ArrayList<>();
        SimLeaderGroup group;
        /** Leader election in the database ({@link SimulationBuilder#databaseElection()}), else null. */
        SimLeaseElection leases;
        final List<DefaultDispatcher> dispatchers = new ArrayList<>();
        /** A sharded outbox's group and dispatchers (with {@link SimulationBuilder#shards}), else null and empty. */
        SimShardedLeaderGroup shardGroup;
        final List<ShardedDispatcher> sharded = new ArrayList<>();
        final Set<String> leaving = new HashSet<>();
        /** Per shard, the changes of its assignment and other leadership faults so far (for G4). */
        int[] shardFaults;
        int rebalances = config.rebalances;
        int joins = config.joins;

        // the broker
        Lock brokerLock;
        Condition resolved;
        final List<Pending> pending = new ArrayList<>();
        final Map<String, List<Long>> log = new LinkedHashMap<>();
        final Set<Long> appended = new HashSet<>();
        final Map<Long, Integer> faultsAtFirstSend = new HashMap<>();
        /** The transactional broker with its progress record ({@link SimulationBuilder#exactlyOnce()}), else null. */
        SimTransactionalBroker eos;

        // leadership, as the listeners report it
        int acquisitions;
        final Map<String, Integer> lastAcquired = new HashMap<>();
        final Set<String> stalled = new HashSet<>();

        // the writers
        final Map<String, Integer> written = new LinkedHashMap<>();
        final Map<String, TestTransaction> open = new LinkedHashMap<>();
        final Map<String, List<Long>> openIds = new HashMap<>();
        final Set<Long> committed = new TreeSet<>();
        final Map<String, Boolean> lateWrites = new HashMap<>();
        final Map<String, Long> openedAt = new HashMap<>();
        final Set<Long> rolledBack = new TreeSet<>();
        Long poisonId;

        // the fault budgets and timed events
        int faults;
        int sendFailures = config.sendFailures;
        int duplicates = config.duplicateAcks;
        int storeErrors = config.storeErrors;
        int leaderChanges = config.leaderChanges;
        int rollbacks = config.rollbacks;
        final List<Timed> timed = new ArrayList<>();
        int turns;
        int faultsFrom;

        boolean faultsOn() {
            return turns >= faultsFrom;
        }

        Run(SimScheduler sched) {
            this.sched = sched;
        }

        void main() {
            if (config.stream) {
                commitLog = new InMemoryCommitLog(sched.clock());
            } else {
                store = new InMemoryStore(sched.clock());
                store.setFaults(this::storeFault);
                store.setFencing(config.storageFencing);
            }
            if (config.shards > 1) {
                store.setShards(config.shards);
                shardFaults = new int[config.shards];
                shardGroup = new SimShardedLeaderGroup(sched, config.shards, stalled::contains,
                        s -> shardFaults[s]++, this::event, config.grantBeforeDrain);
            }
            group = new SimLeaderGroup(sched, stalled::contains);
            if (config.databaseElection) {
                leases = new SimLeaseElection(sched, config.engine, config.deliveryTimeout,
                        SimLeaseElection.epochs(store, config.storageFencing, config.shards), this::event, row -> {
                            if (shardFaults != null) {
                                shardFaults[row - 1]++;
                            }
                        }, config.renewalAfterLapse, leaseEnvironment());
            }
            brokerLock = sched.newLock();
            resolved = brokerLock.newCondition();
            if (config.exactlyOnce) {
                eos = new SimTransactionalBroker(sched, config.progressBugs, config.deliveryTimeout,
                        config.sendFailures, config.duplicateAcks, new SimTransactionalBroker.Hooks(this::event,
                                this::violation, this::append, this::sending, () -> faults++,
                                n -> sched.paused(n + "-")));
            }
            for (int k = 0; k < config.keys; k++) {
                written.put("k" + k, 0);
                log.put("k" + k, new ArrayList<>());
            }
            for (int i = 0; i < config.dispatchers && shardGroup != null; i++) {
                newShardedDispatcher("d" + i);
            }
            for (int i = 0; i < config.dispatchers && shardGroup == null; i++) {
                String name = "d" + i;
                Store s = store;
                if (config.stream) {
                    InMemoryStreamStore ss = new InMemoryStreamStore(commitLog, name, sched.clock(),
                            config.takeoverTimeout);
                    ss.setFaults(this::storeFault);
                    ss.confirmOnRead(config.confirmOnRead);
                    StreamStore view = (StreamStore) StreamStore.of(ss); // the engine's own harvest of the log
                    streamStores.add(view);
                    s = view;
                }
                DefaultDispatcher d = new DefaultDispatcher(name, s,
                        eos != null ? eos.producer(name) : new Broker(name),
                        leases != null ? leases.newMember(name) : group.newMember(name), config.engine,
                        listener(name), sched);
                dispatchers.add(d);
            }
            for (DefaultDispatcher d : dispatchers) {
                d.start();
            }
            for (ShardedDispatcher d : sharded) {
                d.start();
            }
            // Faults begin at an environment turn the run chooses: early in some runs, late in others.
            faultsFrom = sched.choose(FAULT_DELAY_TURNS, "faults from turn");
            long horizon = config.timeLimit.toNanos() - config.settle.toNanos();
            while (true) {
                runDue();
                if (quiescent()) {
                    break;
                }
                if (sched.now() > horizon) {
                    violation("G1: not drained after " + ms(sched.now()) + ": rows left " + storeState()
                            + ", pending sends " + pending.size());
                    break;
                }
                List<Action> actions = actions();
                int c = sched.choose(actions.size(), "env " + actions.stream().map(Action::label)
                        .collect(java.util.stream.Collectors.joining("|")));
                Action a = actions.get(c);
                turns++;
                a.run.run();
                sched.yieldPoint();
            }
            List<dev.outbox.Dispatcher> all = new ArrayList<>(dispatchers);
            all.addAll(sharded);
            for (dev.outbox.Dispatcher d : all) {
                d.close();
                try {
                    d.await();
                } catch (Exception e) {
                    violation(d + " stopped with an error: " + e);
                }
            }
        }

        /** What the lease election's faults need of this run: its timed events, its dispatchers. */
        SimLeaseElection.Environment leaseEnvironment() {
            return new SimLeaseElection.Environment() {
                @Override
                public void later(long at, String label, Runnable action) {
                    timed.add(new Timed(at, label, action));
                }

                @Override
                public void closeDispatcher(String name) {
                    leaving.add(name);
                    DefaultDispatcher d = dispatchers.get(Integer.parseInt(name.substring(1)));
                    sched.start(name + "-leaving", d::close);
                }

                @Override
                public boolean leadsShards(String name, Set<Integer> shards) {
                    ShardedDispatcher d = sharded.get(Integer.parseInt(name.substring(1)));
                    for (int s : shards) {
                        if (!d.shardDispatchers().get(s).isLeader()) {
                            return false;
                        }
                    }
                    return true;
                }
            };
        }

        /**
         * A sharded outbox's dispatcher {@code name}, over the one store, its own broker and the shard group (or the
         * shard leases in the database).
         */
        ShardedDispatcher newShardedDispatcher(String name) {
            Store s = config.forgetShardFilter ? ForgetfulShards.of(store) : store;
            ShardedDispatcher d = new ShardedDispatcher(name, s, new Broker(name),
                    leases != null ? leases.newShardedMember(name, config.shards) : shardGroup.newMember(name),
                    config.engine, listener(name), sched);
            sharded.add(d);
            return d;
        }

        boolean quiescent() {
            return open.isEmpty() && allWritten() && pending.isEmpty() && storeSize() == 0 && timed.isEmpty()
                    && (eos == null || eos.settled());
        }

        boolean allWritten() {
            for (int n : written.values()) {
                if (n < config.recordsPerKey) {
                    return false;
                }
            }
            return true;
        }

        // ---- the environment's actions

        record Action(String label, Runnable run) {
        }

        record Timed(long at, String label, Runnable run) {
        }

        /**
         * The environment's options, the happy path first: a run of first options acknowledges every send and
         * commits every transaction at once, so that a failing run shrinks towards the faults it needs.
         */
        List<Action> actions() {
            List<Action> list = new ArrayList<>();
            if (eos != null) {
                eos.offer(true, false, (label, step) -> list.add(new Action(label, step)));
            }
            for (Pending p : pending) {
                list.add(new Action("ack", () -> resolve(p, Resolution.ACK)));
            }
            String late = null;
            for (String key : open.keySet()) {
                if (isLate(key)) {
                    late = key; // offered after idle: on the happy path it commits once the others are done
                } else {
                    list.add(new Action("commit " + key, () -> commit(key)));
                }
            }
            for (Map.Entry<String, Integer> e : written.entrySet()) {
                String key = e.getKey();
                if (!open.containsKey(key) && e.getValue() < config.recordsPerKey) {
                    list.add(new Action("write " + key, () -> write(key)));
                }
            }
            list.add(new Action("idle", this::idle));
            if (late != null) {
                String key = late;
                list.add(new Action("commit " + key + " (late)", () -> commit(key)));
            }
            if (eos != null) {
                eos.offer(false, faultsOn(), (label, step) -> list.add(new Action(label, step)));
            }
            if (!faultsOn()) {
                return list;
            }
            for (Pending p : pending) {
                if (sendFailures > 0) {
                    list.add(new Action("fail", () -> resolve(p, Resolution.FAIL)));
                }
                if (duplicates > 0) {
                    list.add(new Action("append, then fail", () -> resolve(p, Resolution.APPEND_THEN_FAIL)));
                }
            }
            if (rollbacks > 0) {
                for (String key : open.keySet()) {
                    list.add(new Action("roll back " + key, () -> rollBack(key)));
                }
            }
            if (shardGroup != null) {
                shardedActions(list);
            }
            String owner = leases != null ? leases.owner() : group.owner();
            // With exactly-once, a pause only of an owner that acted on its leadership (as acted() for shards).
            boolean acted = eos == null || owner != null && dispatchers.get(Integer.parseInt(owner.substring(1)))
                    .isLeader();
            // A leader change only where it can matter: while a send is under way or a row waits for its purge.
            if (leases != null && leaderChanges > 0 && owner != null && !leaving.contains(owner) && acted
                    && (!pending.isEmpty() || storeSize() > 0)) {
                leases.offerHolderFaults(owner, dispatchers.size() - leaving.size() > 1,
                        (label, fault) -> list.add(new Action(label, () -> {
                            leaderChanges--;
                            faults++;
                            fault.run();
                        })));
            } else if (leases == null && leaderChanges > 0 && owner != null
                    && (!pending.isEmpty() || storeSize() > 0)) {
                list.add(new Action("revoke", () -> revoke(owner)));
                list.add(new Action("partition", () -> partition(owner)));
                if (acted) {
                    list.add(new Action("pause", () -> pause(owner)));
                }
            }
            return list;
        }

        /**
         * Whether {@code key}'s open transaction is one of the configured late commits: the first
         * {@code lateCommits} transactions of k0, held open while another key has writes left, or for
         * {@code lateCommitFor} after they began.
         */
        boolean isLate(String key) {
            if (!key.equals("k0") || lateWrites.get(key) == null || !lateWrites.get(key)) {
                return false;
            }
            boolean othersBusy = false;
            for (Map.Entry<String, Integer> e : written.entrySet()) {
                if (!e.getKey().equals(key) && (e.getValue() < config.recordsPerKey || open.containsKey(e.getKey()))) {
                    othersBusy = true;
                }
            }
            return othersBusy || sched.now() - openedAt.get(key) < config.lateCommitFor.toNanos();
        }

        void write(String key) {
            int n = written.get(key);
            lateWrites.put(key, key.equals("k0") && n < config.lateCommits);
            openedAt.put(key, sched.now());
            written.put(key, n + 1);
            boolean poison = config.poison && key.equals("k1") && n == 0;
            OutboxMessage message = OutboxMessage.of(poison ? POISON_TOPIC : "t", key, key + "-" + n);
            TestTransaction tx;
            long id;
            if (config.stream) {
                InMemoryCommitLog.Transaction t = commitLog.begin();
                id = t.write(message);
                tx = t;
            } else {
                InMemoryStore.Transaction t = store.begin();
                id = t.write(message);
                tx = t;
            }
            if (poison) {
                poisonId = id;
            }
            open.put(key, tx);
            openIds.put(key, List.of(id));
            event("writer: begins a transaction for " + key + ", writes #" + id + (poison ? " (poison)" : ""));
        }

        void commit(String key) {
            open.remove(key).commit();
            committed.addAll(openIds.get(key));
            event("writer: commits #" + openIds.get(key));
        }

        void rollBack(String key) {
            rollbacks--;
            open.remove(key).rollback();
            rolledBack.addAll(openIds.get(key));
            if (poisonId != null && openIds.get(key).contains(poisonId)) {
                poisonId = null;
            }
            event("writer: rolls back #" + openIds.get(key));
        }

        void idle() {
            long until = sched.now() + config.idleStep.toNanos();
            for (Timed t : timed) {
                until = Math.min(until, t.at);
            }
            for (Pending p : pending) {
                until = Math.min(until, p.due);
            }
            sched.sleepUntil(eos == null ? until : Math.min(until, eos.nextDue()));
        }

        void runDue() {
            for (Pending p : new ArrayList<>(pending)) {
                if (p.due <= sched.now()) {
                    faults++;
                    resolve(p, Resolution.TIMEOUT);
                }
            }
            if (eos != null) {
                eos.runDue();
            }
            for (Timed t : new ArrayList<>(timed)) {
                if (t.at <= sched.now()) {
                    timed.remove(t);
                    event(t.label);
                    t.run.run();
                }
            }
        }

        void revoke(String owner) {
            leaderChanges--;
            faults++;
            event("group: revokes " + owner + " (an orderly hand-over)");
            group.revoke();
        }

        void partition(String owner) {
            leaderChanges--;
            faults++;
            stalled.add(owner);
            event("group: " + owner + " is cut off; its heartbeats are lost");
            timed.add(new Timed(sched.now() + config.sessionTimeout.toNanos(),
                    "group: " + owner + "'s session expired; the partition moves on", () -> {
                        if (owner.equals(group.owner())) {
                            group.expire();
                        }
                        stalled.remove(owner);
                    }));
        }

        void pause(String owner) {
            leaderChanges--;
            faults++;
            long until = sched.now() + config.sessionTimeout.toNanos() + config.engine.heartbeatTimeout().toNanos();
            sched.pause(owner + "-", until);
            stalled.add(owner);
            event(owner + ": the whole process is paused until " + ms(until));
            timed.add(new Timed(sched.now() + config.sessionTimeout.toNanos(),
                    "group: " + owner + "'s session expired; the partition moves on", () -> {
                        if (owner.equals(group.owner())) {
                            group.expire();
                        }
                        stalled.remove(owner);
                    }));
        }

        // ---- leader election in the database

        /**
         * A sharded outbox's leadership faults with shard leases in the database: a dispatcher joining or leaving
         * (the members balance the leases among themselves), and the lease holders' faults
         * ({@link SimLeaseElection#offerShardFaults}).
         */
        void shardLeaseActions(List<Action> list) {
            List<String> live = new ArrayList<>();
            for (int i = 0; i < sharded.size(); i++) {
                String name = "d" + i;
                if (!leaving.contains(name)) {
                    live.add(name);
                }
            }
            if (joins > 0) {
                list.add(new Action("join", this::join));
            }
            if (live.size() > 1) {
                list.add(new Action("leave", () -> leave(live)));
            }
            leases.offerShardFaults(live, config.shards, (label, fault) -> list.add(new Action(label, () -> {
                rebalances--;
                fault.run();
            })));
        }

        // ---- a sharded outbox's leadership

        /**
         * A sharded outbox's leadership faults, only where they can matter (a send under way or a row waiting): an
         * orderly move of a shard, a dispatcher joining or leaving (a rebalance), a dispatcher cut off from the group
         * or paused past its session (its shards are taken from it), a shard whose heartbeats stall (its leader
         * fences itself, and leads again when they return).
         */
        void shardedActions(List<Action> list) {
            if (rebalances <= 0 || pending.isEmpty() && storeSize() == 0) {
                return;
            }
            if (leases != null) {
                shardLeaseActions(list);
                return;
            }
            List<String> live = liveDispatchers();
            if (live.size() > 1 && !shardGroup.movable().isEmpty()) {
                list.add(new Action("move a shard", this::moveShard));
            }
            if (joins > 0) {
                list.add(new Action("join", this::join));
            }
            if (live.size() > 1) {
                list.add(new Action("leave", () -> leave(live)));
            }
            List<String> owners = new ArrayList<>();
            List<String> settled = new ArrayList<>();
            for (String m : live) {
                if (!shardGroup.owned(m).isEmpty()) {
                    owners.add(m);
                    if (acted(m)) {
                        settled.add(m);
                    }
                }
            }
            if (!owners.isEmpty()) {
                list.add(new Action("partition a dispatcher", () -> partitionMember(owners)));
            }
            if (!settled.isEmpty()) {
                list.add(new Action("pause a dispatcher", () -> pauseMember(settled)));
            }
            if (!shardGroup.movable().isEmpty()) {
                list.add(new Action("stall a shard's heartbeats", this::stallShard));
            }
        }

        /**
         * Whether dispatcher {@code name} acted on every assignment the group gave it: nothing waits for its poll and
         * it leads each shard it owns. Only such a dispatcher is paused: a process paused between receiving an
         * assignment and acting on it acts on it when it resumes, after its session expired and another took the
         * shard, and leads it beside the new owner until it hears of the loss (the same window as a pause inside a
         * send, which only fencing by the broker closes; see {@code SimulationTest}).
         */
        boolean acted(String name) {
            if (!shardGroup.settled(name)) {
                return false;
            }
            ShardedDispatcher d = sharded.get(Integer.parseInt(name.substring(1)));
            for (int s : shardGroup.owned(name)) {
                if (!d.shardDispatchers().get(s).isLeader()) {
                    return false;
                }
            }
            return true;
        }

        /** The dispatchers in the group that are not leaving. */
        List<String> liveDispatchers() {
            List<String> live = new ArrayList<>(shardGroup.live());
            live.removeAll(leaving);
            return live;
        }

        void moveShard() {
            rebalances--;
            List<Integer> movable = shardGroup.movable();
            int shard = movable.get(sched.choose(movable.size(), "move which shard " + movable));
            String from = shardGroup.owner(shard);
            List<String> to = liveDispatchers();
            to.remove(from);
            String dest = to.get(sched.choose(to.size(), "move shard " + shard + " to " + to));
            event("group: moves shard " + shard + " from " + from + " to " + dest + " (an orderly revocation)");
            shardGroup.move(shard, dest);
        }

        void join() {
            rebalances--;
            joins--;
            String name = "d" + sharded.size();
            event("group: " + name + " joins (a rebalance)");
            newShardedDispatcher(name).start();
        }

        void leave(List<String> live) {
            rebalances--;
            String name = live.get(sched.choose(live.size(), "which leaves " + live));
            leaving.add(name);
            event("group: " + name + " leaves: its dispatcher closes");
            ShardedDispatcher d = sharded.get(Integer.parseInt(name.substring(1)));
            sched.start(name + "-leaving", d::close);
        }

        void partitionMember(List<String> owners) {
            rebalances--;
            String name = owners.get(sched.choose(owners.size(), "partition which " + owners));
            cutOff(name, name + " is cut off from the group; its heartbeats are lost");
        }

        void pauseMember(List<String> owners) {
            rebalances--;
            String name = owners.get(sched.choose(owners.size(), "pause which " + owners));
            long until = sched.now() + config.sessionTimeout.toNanos() + config.engine.heartbeatTimeout().toNanos();
            sched.pause(name + "-", until);
            cutOff(name, name + ": the whole process is paused until " + ms(until));
        }

        /** {@code name} stops reaching the group; its session expires after the session timeout. */
        void cutOff(String name, String what) {
            for (int s : shardGroup.owned(name)) {
                shardFaults[s]++;
            }
            stalled.add(name);
            event(what);
            timed.add(new Timed(sched.now() + config.sessionTimeout.toNanos(),
                    "group: " + name + "'s session times out", () -> {
                        shardGroup.expire(name);
                        stalled.remove(name);
                    }));
        }

        void stallShard() {
            rebalances--;
            List<Integer> movable = shardGroup.movable();
            int shard = movable.get(sched.choose(movable.size(), "stall which shard's heartbeats " + movable));
            shardFaults[shard]++;
            shardGroup.stallHeartbeats(shard, true);
            event("group: shard " + shard + "'s heartbeats are lost (its leader " + shardGroup.owner(shard)
                    + " fences itself)");
            long stall = config.engine.heartbeatTimeout().toNanos() + 2 * config.engine.pollInterval().toNanos();
            timed.add(new Timed(sched.now() + stall, "group: shard " + shard + "'s heartbeats flow again", () -> {
                shardFaults[shard]++;
                shardGroup.stallHeartbeats(shard, false);
            }));
        }

        StoreFaults.Fault storeFault(StoreFaults.Operation op) {
            sched.yieldPoint();
            switch (op) {
                case MARK, READ, PURGE, RESET, RETRY_LATER, PARK -> {
                    // Only where there is something to lose: rows in the table.
                    if (storeErrors > 0 && config.storeErrorOps.contains(op) && storeSize() > 0 && faultsOn()) {
                        // A write (not a read) may also be refused for good, as a permission or constraint
                        // error is: the engine holds the rows it concerns and tries them again later.
                        boolean write = op == StoreFaults.Operation.PURGE || op == StoreFaults.Operation.PARK
                                || op == StoreFaults.Operation.RETRY_LATER || op == StoreFaults.Operation.RESET;
                        if (config.stream && op == StoreFaults.Operation.READ) {
                            return streamLoss();
                        }
                        int c = sched.choose(write ? 4 : 3, "store " + op + " none|fail|lost answer|refuse");
                        if (c > 0) {
                            storeErrors--;
                            faults++;
                            event(who() + ": " + op + (c == 1 ? " fails" : c == 2 ? " commits, but its answer is lost"
                                    : " is refused for good (until the next attempt)"));
                            return c == 1 ? StoreFaults.Fault.failBefore() : c == 2 ? StoreFaults.Fault.failAfter()
                                    : StoreFaults.Fault.refuse();
                        }
                    }
                    return StoreFaults.Fault.NONE;
                }
                default -> {
                    return StoreFaults.Fault.NONE;
                }
            }
        }

        /**
         * A stream harvest's read fault: the replication connection is lost (the read fails, the next one opens a new
         * stream), after its last status update reached the server, or, with {@code lostConfirmations}, also before:
         * the confirmation it kept for the next update is lost with it.
         */
        StoreFaults.Fault streamLoss() {
            int c = sched.choose(config.lostConfirmations ? 3 : 2, config.lostConfirmations
                    ? "stream none|lost after its status update|lost with its unsent confirmation"
                    : "stream none|lost after its status update");
            if (c == 0) {
                return StoreFaults.Fault.NONE;
            }
            storeErrors--;
            faults++;
            event(who() + ": the replication connection is lost (a stream open fails)" + (c == 1
                    ? ", after its last status update" : ", and the confirmation it had not sent yet with it"));
            return c == 1 ? StoreFaults.Fault.failAfter() : StoreFaults.Fault.failBefore();
        }

        // ---- the broker

        enum Resolution { ACK, FAIL, APPEND_THEN_FAIL, TIMEOUT, CLOSED }

        final class Pending {
            final String sender;
            final OutboxRecord record;
            final CompletableFuture<Void> future = new CompletableFuture<>();
            final long due;

            Pending(String sender, OutboxRecord record, long due) {
                this.sender = sender;
                this.record = record;
                this.due = due;
            }
        }

        void resolve(Pending p, Resolution how) {
            brokerLock.lock();
            try {
                if (!pending.remove(p)) {
                    return;
                }
                resolved.signalAll();
            } finally {
                brokerLock.unlock();
            }
            OutboxRecord r = p.record;
            long id = wid(r);
            switch (how) {
                case ACK -> {
                    append(p.record);
                    event("broker: acknowledges #" + id + " sent by " + p.sender);
                    p.future.complete(null);
                }
                case FAIL -> {
                    sendFailures--;
                    faults++;
                    event("broker: fails #" + id + " sent by " + p.sender);
                    p.future.completeExceptionally(DeliveryException.retriable("simulated failure", null));
                }
                case APPEND_THEN_FAIL -> {
                    duplicates--;
                    faults++;
                    append(p.record);
                    event("broker: appends #" + id + " but its acknowledgement to " + p.sender + " is lost");
                    p.future.completeExceptionally(DeliveryException.retriable("simulated lost ack", null));
                }
                case TIMEOUT -> {
                    event("broker: #" + id + " sent by " + p.sender + " times out");
                    p.future.completeExceptionally(DeliveryException.retriable("simulated delivery timeout", null));
                }
                case CLOSED -> {
                    event("broker: #" + id + " fails, " + p.sender + "'s producer closed");
                    p.future.completeExceptionally(DeliveryException.retriable("producer closed", null));
                }
            }
        }

        void append(OutboxRecord r) {
            long id = wid(r);
            List<Long> seq = log.get(r.key());
            if (rolledBack.contains(id)) {
                violation("G1: #" + id + " was rolled back, yet it reached the broker");
            }
            if (!seq.isEmpty() && seq.get(seq.size() - 1) > id) {
                violation("G2: key " + r.key() + " went backwards: #" + id + " after " + seq);
            }
            if (eos == null && appended.contains(id) && faultsFor(r.key()) <= faultsAtFirstSend.getOrDefault(id, 0)) {
                violation("G4: #" + id + " reached the broker twice with no fault or change of leader while it"
                        + " was in flight");
            }
            seq.add(id);
            appended.add(id);
        }

        /** {@code name} sends {@code record}: G3 (unsharded), and what G4 needs. */
        void sending(String name, OutboxRecord record) {
            Integer mine = lastAcquired.get(name);
            for (Map.Entry<String, Integer> e : shardGroup != null ? Map.<String, Integer>of().entrySet()
                    : lastAcquired.entrySet()) {
                if (!e.getKey().equals(name) && (mine == null || e.getValue() > mine)) {
                    violation("G3: " + name + " sent #" + wid(record) + " after " + e.getKey()
                            + " acquired leadership");
                }
            }
            faultsAtFirstSend.putIfAbsent(wid(record), faultsFor(record.key()));
            event(name + ": sends #" + wid(record) + " (" + record.key()
                    + (config.stream ? ", read as " + record.id() : "") + ")");
        }

        final class Broker implements MessageBroker {
            final String name;

            Broker(String name) {
                this.name = name;
            }

            @Override
            public CompletionStage<Void> send(OutboxRecord record) {
                if (config.pauseInsideSend) {
                    sched.yieldPoint(); // a pause may fall between the engine's lease check and the send
                }
                if (shardGroup != null) {
                    checkShardLeader(record);
                }
                sending(name, record);
                if (record.topic().equals(POISON_TOPIC)) {
                    event("broker: rejects #" + wid(record) + " for good (poison)");
                    return CompletableFuture.failedFuture(DeliveryException.permanent("poison", null));
                }
                Pending p = new Pending(name, record, sched.now() + config.deliveryTimeout.toNanos());
                pending.add(p); // at once: the record has left
                sched.yieldPoint();
                return p.future;
            }

            /**
             * G3 per shard: the record's shard was last acquired by this dispatcher, never by another one after it
             * (leadership is recorded per dispatcher and shard: "d0/s2").
             */
            private void checkShardLeader(OutboxRecord record) {
                int shard = OutboxShards.shardOf(record.key(), config.shards);
                String suffix = "/s" + shard;
                Integer mine = lastAcquired.get(name + suffix);
                if (mine == null) {
                    violation("G3: " + name + " sent #" + wid(record) + " of shard " + shard + ", which it never led");
                    return;
                }
                for (Map.Entry<String, Integer> e : lastAcquired.entrySet()) {
                    if (e.getKey().endsWith(suffix) && !e.getKey().equals(name + suffix) && e.getValue() > mine) {
                        violation("G3: " + name + " sent #" + wid(record) + " of shard " + shard + " after "
                                + e.getKey() + " acquired its leadership");
                    }
                }
            }

            @Override
            public boolean flush(Duration timeout) {
                long left = timeout.toNanos();
                brokerLock.lock();
                try {
                    while (mine() && left > 0) {
                        left = resolved.awaitNanos(left);
                    }
                    return !mine();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                } finally {
                    brokerLock.unlock();
                }
            }

            private boolean mine() {
                for (Pending p : pending) {
                    if (p.sender.equals(name)) {
                        return true;
                    }
                }
                return false;
            }

            @Override
            public void close(Duration timeout) {
                flush(timeout);
                for (Pending p : new ArrayList<>(pending)) {
                    if (p.sender.equals(name)) {
                        resolve(p, Resolution.CLOSED);
                    }
                }
            }

            @Override
            public String toString() {
                return name;
            }
        }

        // ---- leadership

        DispatcherListener listener(String name) {
            return new DispatcherListener() {
                @Override
                public void leaderAcquired(UUID leaderId) {
                    if (shardGroup != null) {
                        String shard = shardOfWorker(name);
                        if (shard == null) {
                            violation(name + " acquired a shard's leadership off a shard's leader thread ("
                                    + who() + ")");
                            return;
                        }
                        lastAcquired.put(name + "/s" + shard, ++acquisitions);
                        event(name + ": leader of shard " + shard + " acquired");
                        return;
                    }
                    lastAcquired.put(name, ++acquisitions);
                    event(name + ": leader acquired");
                }

                @Override
                public void leaderRefreshed(UUID leaderId) {
                    event(name + ": leader id refreshed" + ofShard(name));
                }

                @Override
                public void leaderRevoked() {
                    event(name + ": leader revoked" + ofShard(name));
                }

                @Override
                public void leaderFenced() {
                    event(name + ": leader fenced" + ofShard(name));
                }

                @Override
                public void recordParked(ParkedRecord record) {
                    event(name + ": parks " + (config.stream ? "as parked #" : "#") + record.id() + " ("
                            + record.reason() + ")");
                }

                @Override
                public void failure(String operation, Throwable error) {
                    event(name + ": " + operation + " failed: " + error.getMessage());
                }
            };
        }

        /**
         * The shard whose harvest the running worker belongs to ({@code d0-s2-leader}: "2"), or null. A sharded
         * dispatcher's one listener hears every shard; the shard's leader thread is the one that reports.
         */
        String shardOfWorker(String dispatcher) {
            String w = sched.currentWorker();
            String prefix = dispatcher + "-s";
            if (w == null || !w.startsWith(prefix)) {
                return null;
            }
            int end = w.indexOf('-', prefix.length());
            return end < 0 ? null : w.substring(prefix.length(), end);
        }

        String ofShard(String dispatcher) {
            if (shardGroup == null) {
                return "";
            }
            String shard = shardOfWorker(dispatcher);
            return shard == null ? "" : " (shard " + shard + ")";
        }

        /**
         * The faults that excuse a duplicate of a {@code key} record: every fault; with shards, the store's and the
         * broker's and those of the key's own shard's leadership, not a leadership change of another shard.
         */
        int faultsFor(String key) {
            return shardFaults == null ? faults : faults + shardFaults[OutboxShards.shardOf(key, config.shards)];
        }

        // ---- checks and reports

        void checkEnd() {
            Set<Long> parkedIds = new TreeSet<>();
            if (config.stream) {
                parkedIds.addAll(commitLog.parkedWriterIds());
            } else {
                for (ParkedRecord p : store.parkedRows()) {
                    parkedIds.add(p.id());
                }
            }
            for (long id : committed) {
                boolean poison = poisonId != null && id == poisonId;
                if (poison) {
                    if (!parkedIds.contains(id)) {
                        violation("G6: poison #" + id + " was not parked");
                    }
                    if (appended.contains(id)) {
                        violation("G6: poison #" + id + " reached the broker");
                    }
                } else if (!appended.contains(id)) {
                    violation("G1: committed #" + id + " never reached the broker" + (parkedIds.contains(id)
                            ? " (it was parked)" : ""));
                }
            }
        }

        /** The writer's id of a record: its row id, or in the stream harvest the writer id it carries. */
        long wid(OutboxRecord r) {
            return config.stream ? InMemoryStreamStore.writerId(r) : r.id();
        }

        /** Committed records the store still holds: rows, or messages the slot retains. */
        int storeSize() {
            if (config.stream) {
                return commitLog == null ? 0 : commitLog.retainedCount();
            }
            return store == null ? 0 : store.size();
        }

        String storeState() {
            if (config.stream) {
                if (commitLog == null) {
                    return "";
                }
                StringBuilder sb = new StringBuilder(commitLog.describe());
                for (StreamStore ss : streamStores) {
                    sb.append("|pending ").append(ss.backlog()).append(ss.streaming() ? " streaming" : "");
                }
                return sb.toString();
            }
            return store == null ? "" : store.rows().toString();
        }

        void violation(String what) {
            String v = "[" + ms(sched.now()) + "] " + what;
            violations.add(v);
            trace.add(v + "   <-- VIOLATION");
        }

        void event(String what) {
            trace.add("[" + ms(sched.now()) + "] " + what);
        }

        String who() {
            String w = sched.currentWorker();
            return w == null ? "?" : w;
        }

        String fingerprint() {
            StringBuilder sb = new StringBuilder();
            // Virtual time is part of the state: the engine's loops keep timing in local variables (backoffs, the
            // last rescan) that no fingerprint sees, so only runs that reach the same state at the same time merge.
            sb.append(sched.now()).append('|');
            sb.append(storeState()).append('|').append(log).append('|');
            for (Pending p : pending) {
                sb.append(p.sender).append(p.record.id()).append('@').append(p.due - sched.now()).append(',');
            }
            sb.append('|').append(written).append(open.keySet()).append(committed).append(rolledBack)
                    .append('|').append(group == null ? "" : group.owner()).append(stalled).append(lastAcquired)
                    .append(leases == null ? "" : leases).append(leaving)
                    .append('|').append(sendFailures).append(duplicates).append(storeErrors).append(leaderChanges)
                    .append(rollbacks).append('|').append(eos == null ? "" : eos);
            for (Timed t : timed) {
                sb.append(t.label).append('@').append(t.at - sched.now()).append(',');
            }
            for (DefaultDispatcher d : dispatchers) {
                sb.append('|').append(d.simulationState());
            }
            if (shardGroup != null) {
                sb.append('|').append(shardGroup).append(java.util.Arrays.toString(shardFaults)).append(rebalances)
                        .append(joins).append(leaving);
                for (ShardedDispatcher d : sharded) {
                    for (DefaultDispatcher s : d.shardDispatchers()) {
                        sb.append('|').append(s.simulationState());
                    }
                }
            }
            sb.append('|').append(sched.workerStates());
            return sb.toString();
        }
    }

    static String ms(long nanos) {
        return String.format("%8.3fs", nanos / 1e9);
    }

    // ------------------------------------------------------------------------------------------ results

    /**
     * What a run did: its choices (which replay it), its trace (what happened, step by step, in virtual time) and
     * the guarantees it broke.
     *
     * @param choices     the options taken, in order: {@link Chooser#script} of them replays the run
     * @param options     how many options each choice had
     * @param trace       what happened, one line per step, stamped with virtual time
     * @param violations  the guarantees broken ("G2: ..."), or why the run did not finish; empty for a run that
     *                    passed
     * @param choiceCount the choices the scheduler counted (those of two or more options)
     */
    public record Outcome(List<Integer> choices, List<Integer> options, List<String> trace, List<String> violations,
                          long choiceCount) {
        /**
         * Whether the run broke a guarantee (or did not finish).
         *
         * @return {@code true} if {@link #violations()} is not empty
         */
        public boolean failed() {
            return !violations.isEmpty();
        }

        /**
         * The trace and the violations, one per line.
         *
         * @return a text to print for a failing run: the trace, then the violations or "no violation"
         */
        public String report() {
            return String.join("\n", trace) + "\n" + (violations.isEmpty() ? "no violation"
                    : "violations:\n  " + String.join("\n  ", violations));
        }
    }

    // ------------------------------------------------------------------------------------------ configuration

    /**
     * Starts a configuration.
     *
     * @return a new builder with the defaults: 2 keys x 3 records, 2 dispatchers, the engine's mark harvest, no
     *         faults
     */
    public static SimulationBuilder builder() {
        return new SimulationBuilder();
    }
}
