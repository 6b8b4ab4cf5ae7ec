package dev.outbox.testkit.sim;

import dev.outbox.spi.LeaderTransport;

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
    private final Set<String> cutOff = new HashSet<>();

    /**
     * @param takeEpoch         the storage-fencing epoch increment of a lease row, or null without fencing
     * @param renewalAfterLapse the planted bug of {@link SimLeaseTable}
     */
    SimLeaseElection(SimScheduler sched, SimLeaseTimings timings, IntConsumer takeEpoch, Consumer<String> trace,
                     boolean renewalAfterLapse) {
        this.sched = sched;
        this.timings = timings;
        this.trace = trace;
        this.table = new SimLeaseTable(sched, timings.lease(), cutOff::contains, takeEpoch, trace,
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
        return table + " cut off " + cutOff + " " + members.values();
    }
}
