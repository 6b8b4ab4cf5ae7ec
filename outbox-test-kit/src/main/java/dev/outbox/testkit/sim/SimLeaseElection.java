package dev.outbox.testkit.sim;

import dev.outbox.DispatcherConfig;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.StorageFencing;
import dev.outbox.testkit.InMemoryStore;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

import static dev.outbox.testkit.sim.Simulation.ms;

/**
 * A run's leader election in the database ({@link SimulationBuilder#databaseElection()}): one
 * {@link SimLeaseTable} and a {@link SimLeaseTransport} (or {@link SimShardedLeaseTransport}) per dispatcher, and the
 * faults the environment injects into it — a lease holder's clean close, a member cut off from the database (its
 * lease statements fail) until its leases lapsed and another's next try passed, a member's whole process paused past
 * its leases. Who leads is whatever the lease table and the members' own view say; no coordinator moves the lease.
 * The run keeps its fault budgets and its dispatchers; it is told of what a fault does through an
 * {@link Environment}. Only the simulation's workers call it.
 */
final class SimLeaseElection {
    private final SimScheduler sched;
    private final SimLeaseTimings timings;
    private final SimLeaseTable table;
    private final Consumer<String> trace;
    private final IntConsumer changed;
    private final Environment env;
    /** How much longer than a lease a paused process stays paused: the engine's heartbeat timeout. */
    private final long pauseBeyondLease;
    /** How much longer than a lease and a standby's try a cut off member stays cut off: the engine's poll interval. */
    private final long cutBeyondTakeOver;
    private final Map<String, SimLeaseTransport> members = new LinkedHashMap<>();
    private final Map<String, SimShardedLeaseTransport> shardMembers = new LinkedHashMap<>();
    private final Set<String> cutOff = new HashSet<>();

    /** What the lease faults need of the run they are injected into. */
    interface Environment {
        /**
         * Runs {@code action} at virtual time {@code at}, with {@code label} in the trace then (a timed event of the
         * run: it counts as work left, and is part of the run's state).
         *
         * @param at     when, in virtual nanoseconds
         * @param label  what happens then
         * @param action what to do then
         */
        void later(long at, String label, Runnable action);

        /**
         * Closes dispatcher {@code name} cleanly, on a worker of its own: it drains and releases its leases.
         *
         * @param name the dispatcher
         */
        void closeDispatcher(String name);

        /**
         * Whether dispatcher {@code name}'s engine leads each of {@code shards}.
         *
         * @param name   the dispatcher, of a sharded outbox
         * @param shards shard indexes
         * @return true if it leads them all
         */
        boolean leadsShards(String name, Set<Integer> shards);
    }

    /**
     * @param engine            the dispatchers' configuration: the lease's timings derive from it, a pause lasts a
     *                          lease and a heartbeat timeout, a cut a lease, an acquire interval and a poll interval
     * @param deliveryTimeout   the broker's delivery timeout, for the lease's timings
     * @param takeEpoch         the storage-fencing epoch increment of a lease row ({@link #epochs}), or null without
     *                          fencing
     * @param trace             told what happens, for the run's trace
     * @param changed           told of every lease row that changed hands or whose holder a fault hit, by id
     * @param renewalAfterLapse the planted bug of {@link SimLeaseTable}
     * @param env               the run the faults are injected into
     */
    SimLeaseElection(SimScheduler sched, DispatcherConfig engine, Duration deliveryTimeout, IntConsumer takeEpoch,
                     Consumer<String> trace, IntConsumer changed, boolean renewalAfterLapse, Environment env) {
        this.sched = sched;
        this.timings = SimLeaseTimings.of(engine.heartbeatTimeout(), engine.pollInterval(), deliveryTimeout);
        this.trace = trace;
        this.changed = changed;
        this.env = env;
        this.pauseBeyondLease = engine.heartbeatTimeout().toNanos();
        this.cutBeyondTakeOver = engine.pollInterval().toNanos();
        this.table = new SimLeaseTable(sched, timings.lease(), cutOff::contains, takeEpoch, trace, changed,
                renewalAfterLapse);
    }

    /**
     * The lease table's epoch increment of a row, run with its take-over: the outbox's epoch for row 1 of an
     * unsharded outbox, shard {@code row - 1}'s for a sharded one.
     *
     * @param store  the table store, or null (a stream harvest: no storage fencing)
     * @param fenced whether storage fencing is on
     * @param shards the shard count, 1 for an unsharded outbox
     * @return the increment, or null without storage fencing
     */
    static IntConsumer epochs(InMemoryStore store, boolean fenced, int shards) {
        if (!fenced || store == null) {
            return null;
        }
        if (shards > 1) {
            return row -> ((StorageFencing) store.shard(row - 1)).acquireEpoch();
        }
        return row -> store.acquireEpoch();
    }

    /** Dispatcher {@code name}'s transport. */
    LeaderTransport newMember(String name) {
        SimLeaseTransport t = new SimLeaseTransport(sched, table, timings, name, trace);
        members.put(name, t);
        return t;
    }

    /** Dispatcher {@code name}'s transport of a sharded outbox's {@code shards} shard leases. */
    ShardedLeaderTransport newShardedMember(String name, int shards) {
        SimShardedLeaseTransport t = new SimShardedLeaseTransport(sched, table, timings, shards, name, trace);
        shardMembers.put(name, t);
        return t;
    }

    /** The member whose token holds the unexpired lease, as the database sees it now, or null. */
    String owner() {
        String holder = table.holder(SimLeaseTransport.ROW).orElse(null);
        for (Map.Entry<String, SimLeaseTransport> e : members.entrySet()) {
            if (holder != null && holder.equals(e.getValue().token())) {
                return e.getKey();
            }
        }
        return null;
    }

    // ---- the faults of an unsharded outbox's lease holder

    /**
     * Offers the lease holder's faults, each as a labelled action for the run to choose from: a clean close (its
     * dispatcher drains and releases the lease, which a standby takes at its next try; only if {@code mayClose}:
     * another dispatcher stays), a cut from the database (its lease statements fail until its lease lapsed and a
     * standby's next try passed), and a pause of the whole process past its lease.
     *
     * @param owner    the holder
     * @param mayClose whether it may close
     * @param offer    takes each fault's label and action, in the order they are offered
     */
    void offerHolderFaults(String owner, boolean mayClose, BiConsumer<String, Runnable> offer) {
        if (mayClose) {
            offer.accept("close the leader", () -> {
                trace.accept(owner + ": its dispatcher closes (a clean hand-over of the lease)");
                env.closeDispatcher(owner);
            });
        }
        offer.accept("cut the leader off the database", () -> cut(owner));
        offer.accept("pause", () -> pause(owner, ", past its lease"));
    }

    // ---- the faults of a sharded outbox's lease holders

    /**
     * Offers the faults of a sharded outbox's lease holders, each as a labelled action for the run to choose from: a
     * dispatcher holding leases cut off from the database (its lease statements fail until its leases lapsed and
     * another's next try passed), or paused past its leases — only one that acted on every lease it holds: it
     * believes it holds just those and leads each (a process paused between taking a lease and acting on it would act
     * on it when it resumes, after another took the lease).
     *
     * @param live   the dispatchers that are not leaving, in order
     * @param shards the shard count
     * @param offer  takes each fault's label and action, in the order they are offered
     */
    void offerShardFaults(List<String> live, int shards, BiConsumer<String, Runnable> offer) {
        List<String> holders = new ArrayList<>();
        List<String> settled = new ArrayList<>();
        for (String m : live) {
            Set<Integer> held = held(m, shards);
            if (!held.isEmpty()) {
                holders.add(m);
                if (shardMembers.get(m).owned().equals(held) && env.leadsShards(m, held)) {
                    settled.add(m);
                }
            }
        }
        if (!holders.isEmpty()) {
            offer.accept("cut a dispatcher off the database", () -> {
                String name = holders.get(sched.choose(holders.size(), "cut off which " + holders));
                held(name, shards).forEach(s -> changed.accept(s + 1));
                cut(name);
            });
        }
        if (!settled.isEmpty()) {
            offer.accept("pause a dispatcher", () -> {
                String name = settled.get(sched.choose(settled.size(), "pause which " + settled));
                held(name, shards).forEach(s -> changed.accept(s + 1));
                pause(name, ", past its leases");
            });
        }
    }

    /** Cuts {@code name} off the lease table until its leases lapsed and another's next try passed. */
    private void cut(String name) {
        cutOff.add(name);
        long until = sched.now() + timings.lease() + timings.acquire() + cutBeyondTakeOver;
        trace.accept("database: " + name + " is cut off from the lease table until " + ms(until));
        env.later(until, "database: " + name + " reaches the lease table again", () -> cutOff.remove(name));
    }

    /** Pauses {@code name}'s whole process past its leases. */
    private void pause(String name, String what) {
        long until = sched.now() + timings.lease() + pauseBeyondLease;
        sched.pause(name + "-", until);
        trace.accept(name + ": the whole process is paused until " + ms(until) + what);
    }

    /** The shards whose unexpired leases {@code name} holds, as the database sees it now (its token is its name). */
    private Set<Integer> held(String name, int shards) {
        Set<Integer> held = new TreeSet<>();
        for (int s = 0; s < shards; s++) {
            if (name.equals(table.holder(s + 1).orElse(null))) {
                held.add(s);
            }
        }
        return held;
    }

    @Override
    public String toString() {
        return table + " cut off " + cutOff + " " + members.values() + " " + shardMembers.values();
    }
}
