package dev.outbox.testkit.sim;

import dev.outbox.internal.ShardedDispatcher;
import dev.outbox.testkit.StoreFaults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.outbox.testkit.sim.Simulation.ms;

/**
 * The fault offering of a {@link SimRun}: the environment's options at a step (the happy path's first, then the
 * faults its budgets allow, only where they can matter) and the faults themselves: a send failed or its
 * acknowledgement lost, a rollback, a leader revoked, partitioned or paused, a shard moved, a dispatcher joining or
 * leaving, a shard's heartbeats stalling, a store call failing, a stream lost. Each fault spends its budget and is
 * counted for G4. Used on the run's threads under the {@link SimScheduler}, one at a time.
 */
final class SimFaults {
    private final SimRun run;
    private final SimulationConfig config;
    private final SimScheduler sched;

    SimFaults(SimRun run) {
        this.run = run;
        this.config = run.config;
        this.sched = run.sched;
    }

    /**
     * The environment's options, the happy path first: a run of first options acknowledges every send and
     * commits every transaction at once, so that a failing run shrinks towards the faults it needs.
     */
    List<SimRun.Action> actions() {
        List<SimRun.Action> list = new ArrayList<>();
        if (run.eos != null) {
            run.eos.offer(true, false, (label, step) -> list.add(new SimRun.Action(label, step)));
        }
        for (SimBroker.Pending p : run.pending) {
            list.add(new SimRun.Action("ack", () -> run.broker.resolve(p, SimBroker.Resolution.ACK)));
        }
        String late = null;
        for (String key : run.open.keySet()) {
            if (run.isLate(key)) {
                late = key; // offered after idle: on the happy path it commits once the others are done
            } else {
                list.add(new SimRun.Action("commit " + key, () -> run.commit(key)));
            }
        }
        for (Map.Entry<String, Integer> e : run.written.entrySet()) {
            String key = e.getKey();
            if (!run.open.containsKey(key) && e.getValue() < config.recordsPerKey) {
                list.add(new SimRun.Action("write " + key, () -> run.write(key)));
            }
        }
        list.add(new SimRun.Action("idle", run::idle));
        if (late != null) {
            String key = late;
            list.add(new SimRun.Action("commit " + key + " (late)", () -> run.commit(key)));
        }
        if (run.eos != null) {
            run.eos.offer(false, run.faultsOn(), (label, step) -> list.add(new SimRun.Action(label, step)));
        }
        if (!run.faultsOn()) {
            return list;
        }
        for (SimBroker.Pending p : run.pending) {
            if (run.sendFailures > 0) {
                list.add(new SimRun.Action("fail", () -> run.broker.resolve(p, SimBroker.Resolution.FAIL)));
            }
            if (run.duplicates > 0) {
                list.add(new SimRun.Action("append, then fail",
                        () -> run.broker.resolve(p, SimBroker.Resolution.APPEND_THEN_FAIL)));
            }
        }
        if (run.rollbacks > 0) {
            for (String key : run.open.keySet()) {
                list.add(new SimRun.Action("roll back " + key, () -> run.rollBack(key)));
            }
        }
        if (run.shardGroup != null) {
            shardedActions(list);
        }
        String owner = run.leases != null ? run.leases.owner() : run.group.owner();
        // With exactly-once, a pause only of an owner that acted on its leadership (as acted() for shards).
        boolean acted = run.eos == null || owner != null && run.dispatchers.get(Integer.parseInt(owner.substring(1)))
                .isLeader();
        // A leader change only where it can matter: while a send is under way or a row waits for its purge.
        if (run.leases != null && run.leaderChanges > 0 && owner != null && !run.leaving.contains(owner) && acted
                && (!run.pending.isEmpty() || run.storeSize() > 0)) {
            run.leases.offerHolderFaults(owner, run.dispatchers.size() - run.leaving.size() > 1,
                    (label, fault) -> list.add(new SimRun.Action(label, () -> {
                        run.leaderChanges--;
                        run.faults++;
                        fault.run();
                    })));
        } else if (run.leases == null && run.leaderChanges > 0 && owner != null
                && (!run.pending.isEmpty() || run.storeSize() > 0)) {
            list.add(new SimRun.Action("revoke", () -> revoke(owner)));
            list.add(new SimRun.Action("partition", () -> partition(owner)));
            if (acted) {
                list.add(new SimRun.Action("pause", () -> pause(owner)));
            }
        }
        return list;
    }

    void revoke(String owner) {
        run.leaderChanges--;
        run.faults++;
        run.event("group: revokes " + owner + " (an orderly hand-over)");
        run.group.revoke();
    }

    void partition(String owner) {
        run.leaderChanges--;
        run.faults++;
        run.stalled.add(owner);
        run.event("group: " + owner + " is cut off; its heartbeats are lost");
        run.timed.add(new SimRun.Timed(sched.now() + config.sessionTimeout.toNanos(),
                "group: " + owner + "'s session expired; the partition moves on", () -> {
                    if (owner.equals(run.group.owner())) {
                        run.group.expire();
                    }
                    run.stalled.remove(owner);
                }));
    }

    void pause(String owner) {
        run.leaderChanges--;
        run.faults++;
        long until = sched.now() + config.sessionTimeout.toNanos() + config.engine.heartbeatTimeout().toNanos();
        sched.pause(owner + "-", until);
        run.stalled.add(owner);
        run.event(owner + ": the whole process is paused until " + ms(until));
        run.timed.add(new SimRun.Timed(sched.now() + config.sessionTimeout.toNanos(),
                "group: " + owner + "'s session expired; the partition moves on", () -> {
                    if (owner.equals(run.group.owner())) {
                        run.group.expire();
                    }
                    run.stalled.remove(owner);
                }));
    }

    // ---- leader election in the database

    /**
     * A sharded outbox's leadership faults with shard leases in the database: a dispatcher joining or leaving
     * (the members balance the leases among themselves), and the lease holders' faults
     * ({@link SimLeaseElection#offerShardFaults}).
     */
    void shardLeaseActions(List<SimRun.Action> list) {
        List<String> live = new ArrayList<>();
        for (int i = 0; i < run.sharded.size(); i++) {
            String name = "d" + i;
            if (!run.leaving.contains(name)) {
                live.add(name);
            }
        }
        if (run.joins > 0) {
            list.add(new SimRun.Action("join", this::join));
        }
        if (live.size() > 1) {
            list.add(new SimRun.Action("leave", () -> leave(live)));
        }
        run.leases.offerShardFaults(live, config.shards, (label, fault) -> list.add(new SimRun.Action(label, () -> {
            run.rebalances--;
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
    void shardedActions(List<SimRun.Action> list) {
        if (run.rebalances <= 0 || run.pending.isEmpty() && run.storeSize() == 0) {
            return;
        }
        if (run.leases != null) {
            shardLeaseActions(list);
            return;
        }
        List<String> live = liveDispatchers();
        if (live.size() > 1 && !run.shardGroup.movable().isEmpty()) {
            list.add(new SimRun.Action("move a shard", this::moveShard));
        }
        if (run.joins > 0) {
            list.add(new SimRun.Action("join", this::join));
        }
        if (live.size() > 1) {
            list.add(new SimRun.Action("leave", () -> leave(live)));
        }
        List<String> owners = new ArrayList<>();
        List<String> settled = new ArrayList<>();
        for (String m : live) {
            if (!run.shardGroup.owned(m).isEmpty()) {
                owners.add(m);
                if (acted(m)) {
                    settled.add(m);
                }
            }
        }
        if (!owners.isEmpty()) {
            list.add(new SimRun.Action("partition a dispatcher", () -> partitionMember(owners)));
        }
        if (!settled.isEmpty()) {
            list.add(new SimRun.Action("pause a dispatcher", () -> pauseMember(settled)));
        }
        if (!run.shardGroup.movable().isEmpty()) {
            list.add(new SimRun.Action("stall a shard's heartbeats", this::stallShard));
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
        if (!run.shardGroup.settled(name)) {
            return false;
        }
        ShardedDispatcher d = run.sharded.get(Integer.parseInt(name.substring(1)));
        for (int s : run.shardGroup.owned(name)) {
            if (!d.shardDispatchers().get(s).isLeader()) {
                return false;
            }
        }
        return true;
    }

    /** The dispatchers in the group that are not leaving. */
    List<String> liveDispatchers() {
        List<String> live = new ArrayList<>(run.shardGroup.live());
        live.removeAll(run.leaving);
        return live;
    }

    void moveShard() {
        run.rebalances--;
        List<Integer> movable = run.shardGroup.movable();
        int shard = movable.get(sched.choose(movable.size(), "move which shard " + movable));
        String from = run.shardGroup.owner(shard);
        List<String> to = liveDispatchers();
        to.remove(from);
        String dest = to.get(sched.choose(to.size(), "move shard " + shard + " to " + to));
        run.event("group: moves shard " + shard + " from " + from + " to " + dest + " (an orderly revocation)");
        run.shardGroup.move(shard, dest);
    }

    void join() {
        run.rebalances--;
        run.joins--;
        String name = "d" + run.sharded.size();
        run.event("group: " + name + " joins (a rebalance)");
        run.newShardedDispatcher(name).start();
    }

    void leave(List<String> live) {
        run.rebalances--;
        String name = live.get(sched.choose(live.size(), "which leaves " + live));
        run.leaving.add(name);
        run.event("group: " + name + " leaves: its dispatcher closes");
        ShardedDispatcher d = run.sharded.get(Integer.parseInt(name.substring(1)));
        sched.start(name + "-leaving", d::close);
    }

    void partitionMember(List<String> owners) {
        run.rebalances--;
        String name = owners.get(sched.choose(owners.size(), "partition which " + owners));
        cutOff(name, name + " is cut off from the group; its heartbeats are lost");
    }

    void pauseMember(List<String> owners) {
        run.rebalances--;
        String name = owners.get(sched.choose(owners.size(), "pause which " + owners));
        long until = sched.now() + config.sessionTimeout.toNanos() + config.engine.heartbeatTimeout().toNanos();
        sched.pause(name + "-", until);
        cutOff(name, name + ": the whole process is paused until " + ms(until));
    }

    /** {@code name} stops reaching the group; its session expires after the session timeout. */
    void cutOff(String name, String what) {
        for (int s : run.shardGroup.owned(name)) {
            run.shardFaults[s]++;
        }
        run.stalled.add(name);
        run.event(what);
        run.timed.add(new SimRun.Timed(sched.now() + config.sessionTimeout.toNanos(),
                "group: " + name + "'s session times out", () -> {
                    run.shardGroup.expire(name);
                    run.stalled.remove(name);
                }));
    }

    void stallShard() {
        run.rebalances--;
        List<Integer> movable = run.shardGroup.movable();
        int shard = movable.get(sched.choose(movable.size(), "stall which shard's heartbeats " + movable));
        run.shardFaults[shard]++;
        run.shardGroup.stallHeartbeats(shard, true);
        run.event("group: shard " + shard + "'s heartbeats are lost (its leader " + run.shardGroup.owner(shard)
                + " fences itself)");
        long stall = config.engine.heartbeatTimeout().toNanos() + 2 * config.engine.pollInterval().toNanos();
        run.timed.add(new SimRun.Timed(sched.now() + stall, "group: shard " + shard + "'s heartbeats flow again",
                () -> {
                    run.shardFaults[shard]++;
                    run.shardGroup.stallHeartbeats(shard, false);
                }));
    }

    /** The store's fault for a call of {@code op} (the stores' {@code StoreFaults} hook): maybe one, a choice. */
    StoreFaults.Fault storeFault(StoreFaults.Operation op) {
        sched.yieldPoint();
        switch (op) {
            case MARK, READ, PURGE, RESET, RETRY_LATER, PARK -> {
                // Only where there is something to lose: rows in the table.
                if (run.storeErrors > 0 && config.storeErrorOps.contains(op) && run.storeSize() > 0
                        && run.faultsOn()) {
                    // A write (not a read) may also be refused for good, as a permission or constraint
                    // error is: the engine holds the rows it concerns and tries them again later.
                    boolean write = op == StoreFaults.Operation.PURGE || op == StoreFaults.Operation.PARK
                            || op == StoreFaults.Operation.RETRY_LATER || op == StoreFaults.Operation.RESET;
                    if (config.stream && op == StoreFaults.Operation.READ) {
                        return streamLoss();
                    }
                    int c = sched.choose(write ? 4 : 3, "store " + op + " none|fail|lost answer|refuse");
                    if (c > 0) {
                        run.storeErrors--;
                        run.faults++;
                        run.event(run.who() + ": " + op + (c == 1 ? " fails"
                                : c == 2 ? " commits, but its answer is lost"
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
        run.storeErrors--;
        run.faults++;
        run.event(run.who() + ": the replication connection is lost (a stream open fails)" + (c == 1
                ? ", after its last status update" : ", and the confirmation it had not sent yet with it"));
        return c == 1 ? StoreFaults.Fault.failAfter() : StoreFaults.Fault.failBefore();
    }
}
