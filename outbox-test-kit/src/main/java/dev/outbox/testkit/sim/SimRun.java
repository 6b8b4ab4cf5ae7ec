package dev.outbox.testkit.sim;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.internal.DefaultDispatcher;
import dev.outbox.internal.ShardedDispatcher;
import dev.outbox.internal.StreamStore;
import dev.outbox.spi.Store;
import dev.outbox.testkit.InMemoryCommitLog;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.InMemoryStreamStore;
import dev.outbox.testkit.TestTransaction;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static dev.outbox.testkit.sim.Simulation.ms;

/**
 * One run of a {@link Simulation}: its world (the store or commit log, the dispatchers, the leader group or lease
 * election, the broker's pending sends and log, the writers' transactions, the fault budgets and timed events), its
 * main loop (the environment's turns, each a choice among {@link SimFaults#actions()}), the writers' steps, the trace
 * and the state's fingerprint. Its other rooms: {@link SimFaults} (what the environment may do), {@link SimBroker}
 * (the simulated broker), {@link SimChecks} (the guarantees). Used on the run's threads under its
 * {@link SimScheduler}, one at a time.
 */
final class SimRun {
    /** The environment's turns within which the first fault may come. */
    private static final int FAULT_DELAY_TURNS = 24;

    final SimulationConfig config;
    final SimScheduler sched;
    final SimChecks checks;
    final SimFaults faultOffer;
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
    int rebalances;
    int joins;

    // the broker
    SimBroker broker;
    final List<SimBroker.Pending> pending = new ArrayList<>();
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
    int sendFailures;
    int duplicates;
    int storeErrors;
    int leaderChanges;
    int rollbacks;
    final List<Timed> timed = new ArrayList<>();
    int turns;
    int faultsFrom;

    /** Whether the environment may inject faults yet: from the turn the run chose. */
    boolean faultsOn() {
        return turns >= faultsFrom;
    }

    /** A run of {@code config} on {@code sched}; {@link #main} plays it as the scheduler's first worker. */
    SimRun(SimulationConfig config, SimScheduler sched) {
        this.config = config;
        this.sched = sched;
        rebalances = config.rebalances;
        joins = config.joins;
        sendFailures = config.sendFailures;
        duplicates = config.duplicateAcks;
        storeErrors = config.storeErrors;
        leaderChanges = config.leaderChanges;
        rollbacks = config.rollbacks;
        checks = new SimChecks(this);
        faultOffer = new SimFaults(this);
    }

    /** Sets the world up, plays the environment's turns until it is quiescent or out of time, and closes it. */
    void main() {
        if (config.stream) {
            commitLog = new InMemoryCommitLog(sched.clock());
        } else {
            store = new InMemoryStore(sched.clock());
            store.setFaults(faultOffer::storeFault);
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
        broker = new SimBroker(this);
        if (config.exactlyOnce) {
            eos = new SimTransactionalBroker(sched, config.progressBugs, config.deliveryTimeout,
                    config.sendFailures, config.duplicateAcks, new SimTransactionalBroker.Hooks(this::event,
                            this::violation, checks::append, checks::sending, () -> faults++,
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
                ss.setFaults(faultOffer::storeFault);
                ss.confirmOnRead(config.confirmOnRead);
                StreamStore view = (StreamStore) StreamStore.of(ss); // the engine's own harvest of the log
                streamStores.add(view);
                s = view;
            }
            DefaultDispatcher d = new DefaultDispatcher(name, s,
                    eos != null ? eos.producer(name) : broker.forDispatcher(name),
                    leases != null ? leases.newMember(name) : group.newMember(name), config.engine,
                    checks.listener(name), sched);
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
            List<Action> actions = faultOffer.actions();
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
        ShardedDispatcher d = new ShardedDispatcher(name, s, broker.forDispatcher(name),
                leases != null ? leases.newShardedMember(name, config.shards) : shardGroup.newMember(name),
                config.engine, checks.listener(name), sched);
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
        OutboxMessage message = OutboxMessage.of(poison ? Simulation.POISON_TOPIC : "t", key, key + "-" + n);
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
        for (SimBroker.Pending p : pending) {
            until = Math.min(until, p.due);
        }
        sched.sleepUntil(eos == null ? until : Math.min(until, eos.nextDue()));
    }

    void runDue() {
        for (SimBroker.Pending p : new ArrayList<>(pending)) {
            if (p.due <= sched.now()) {
                faults++;
                broker.resolve(p, SimBroker.Resolution.TIMEOUT);
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
        for (SimBroker.Pending p : pending) {
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
