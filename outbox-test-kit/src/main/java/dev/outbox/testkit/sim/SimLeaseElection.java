package dev.outbox.testkit.sim;

import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

/**
 * A run's leader election in the database ({@link Simulation.Builder#databaseElection()}): one
 * {@link SimLeaseTable} and a {@link SimLeaseTransport} per dispatcher, and the faults the environment injects into
 * it — a member cut off from the database (its lease statements fail) until a given time. Who leads is whatever the
 * lease table and the members' own view say; no coordinator moves the lease. Only the simulation's workers call it.
 */
final class SimLeaseElection {
    private final SimScheduler sched;
    private final SimLeaseTimings timings;
    private final SimLeaseTable table;
    private final Consumer<String> trace;
    private final Map<String, SimLeaseTransport> members = new LinkedHashMap<>();
    private final Map<String, SimShardedLeaseTransport> shardMembers = new LinkedHashMap<>();
    private final Set<String> cutOff = new HashSet<>();

    /**
     * @param takeEpoch         the storage-fencing epoch increment of a lease row, or null without fencing
     * @param changed           told of every lease row that changed hands, by id
     * @param renewalAfterLapse the planted bug of {@link SimLeaseTable}
     */
    SimLeaseElection(SimScheduler sched, SimLeaseTimings timings, IntConsumer takeEpoch, Consumer<String> trace,
                     IntConsumer changed, boolean renewalAfterLapse) {
        this.sched = sched;
        this.timings = timings;
        this.trace = trace;
        this.table = new SimLeaseTable(sched, timings.lease(), cutOff::contains, takeEpoch, trace, changed,
                renewalAfterLapse);
    }

    SimLeaseTimings timings() {
        return timings;
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

    /** The shards whose unexpired leases {@code name} holds, as the database sees it now (its token is its name). */
    Set<Integer> held(String name, int shards) {
        Set<Integer> held = new java.util.TreeSet<>();
        for (int s = 0; s < shards; s++) {
            if (name.equals(table.holder(s + 1).orElse(null))) {
                held.add(s);
            }
        }
        return held;
    }

    /** The shards {@code name}'s transport believes it holds. */
    Set<Integer> owned(String name) {
        return shardMembers.get(name).owned();
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

    /** Whether {@code name} reaches the database: cut off, its lease statements fail. */
    void reach(String name, boolean reaches) {
        if (reaches) {
            cutOff.remove(name);
        } else {
            cutOff.add(name);
        }
    }

    @Override
    public String toString() {
        return table + " cut off " + cutOff + " " + members.values() + " " + shardMembers.values();
    }
}
