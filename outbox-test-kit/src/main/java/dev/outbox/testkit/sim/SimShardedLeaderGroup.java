package dev.outbox.testkit.sim;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.testkit.ShardAssignment;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.Predicate;

/**
 * The shard leaders' group for a simulation, as Kafka's group coordinator runs it over a leader topic with one
 * partition per shard: members join (the coordinator moves shards to a newcomer from the busiest members, each by an
 * orderly revocation), leave (their shards go to the others), and expire (a session that timed out: its shards go
 * to the others at once, and the member learns it lost them when it next polls, then rejoins once it reaches the
 * group again). Any shard may also be moved at a point the simulation chooses. An orderly revocation is a barrier:
 * the shard is granted to its next owner only once the old owner's {@code revoked} callback returned (its drain).
 * A member's heartbeats reach it only for the shards it owns, and are lost while it is cut off or while its shard's
 * heartbeats are stalled. Events reach a member when it polls, as they do in Kafka. Only the simulation's workers
 * call it.
 */
final class SimShardedLeaderGroup {
    private final SimScheduler sched;
    private final int shards;
    private final Predicate<String> cutOff;
    private final IntConsumer changed;
    private final Consumer<String> trace;
    private final boolean grantBeforeDrain;
    private final List<Member> members = new ArrayList<>();
    private final ShardAssignment assignment;
    private final boolean[] stalledShard;
    /** Members with events queued since the last {@link #wake()}. */
    private final List<Member> toWake = new ArrayList<>();

    /**
     * @param cutOff           whether a member is cut off from the group (its heartbeats are lost, it is given no
     *                         shard, and it cannot rejoin)
     * @param changed          told of every change to a shard's assignment (for the G4 check)
     * @param trace            told what the group does, for the run's trace
     * @param grantBeforeDrain the planted bug: grant a revoked shard to its next owner at once, without waiting
     *                         for the old owner's drain
     */
    SimShardedLeaderGroup(SimScheduler sched, int shards, Predicate<String> cutOff, IntConsumer changed,
                          Consumer<String> trace, boolean grantBeforeDrain) {
        this.sched = sched;
        this.shards = shards;
        this.cutOff = cutOff;
        this.changed = changed;
        this.trace = trace;
        this.grantBeforeDrain = grantBeforeDrain;
        this.stalledShard = new boolean[shards];
        this.assignment = new ShardAssignment(shards, new ShardAssignment.Group() {
            @Override
            public int members() {
                return members.size();
            }

            @Override
            public boolean eligible(int member) {
                return members.get(member).eligible();
            }

            @Override
            public void granted(int shard, int member) {
                Member to = members.get(member);
                changed.accept(shard);
                trace.accept("group: grants shard " + shard + " to " + to.name);
                to.post(() -> to.listener.assigned(Set.of(shard)));
            }

            @Override
            public void revoking(int shard, int member) {
                Member old = members.get(member);
                changed.accept(shard);
                trace.accept("group: revokes shard " + shard + " from " + old.name);
                if (grantBeforeDrain) {
                    // The planted bug: the next owner is given the shard while the old one may still be draining.
                    old.post(() -> old.listener.revoked(Set.of(shard)));
                    assignment.released(shard, member);
                    return;
                }
                old.post(() -> {
                    old.listener.revoked(Set.of(shard));
                    trace.accept("group: " + old.name + " released shard " + shard);
                    assignment.released(shard, member);
                    wake();
                });
            }

            @Override
            public int pick(int from, int to, List<Integer> candidates) {
                return sched.choose(candidates.size(), "group: which shard of " + members.get(from).name
                        + " moves to " + members.get(to).name + " " + candidates);
            }
        });
    }

    ShardedLeaderTransport newMember(String name) {
        Member m = new Member(members.size(), name);
        members.add(m);
        return m;
    }

    /** The owner of {@code shard}'s name, or null. */
    String owner(int shard) {
        int m = assignment.owner(shard);
        return m < 0 ? null : members.get(m).name;
    }

    /** The shards {@code name} owns. */
    Set<Integer> owned(String name) {
        return assignment.owned(member(name).index);
    }

    /** The members that may be given shards: joined, not expired, not cut off. */
    List<String> live() {
        List<String> l = new ArrayList<>();
        for (Member m : members) {
            if (m.eligible()) {
                l.add(m.name);
            }
        }
        return l;
    }

    /** Shards with an owner and no revocation under way: those {@link #move} may move. */
    List<Integer> movable() {
        return assignment.movable();
    }

    /**
     * Whether {@code name} has acted on everything the group told it: no event waits for its poll, and no revocation
     * of one of its shards is under way.
     */
    boolean settled(String name) {
        Member m = member(name);
        return m.events.isEmpty() && !assignment.revokingFrom(m.index);
    }

    /** Whether {@code shard}'s heartbeats are lost (its channel stalls), for the owner and anyone after it. */
    void stallHeartbeats(int shard, boolean stalled) {
        stalledShard[shard] = stalled;
    }

    /**
     * An orderly move of {@code shard} to {@code to}: its owner is told it is revoked, and once that returned (the
     * drain), the shard is granted to {@code to} (or, if {@code to} is no longer eligible, to the least loaded
     * member).
     */
    boolean move(int shard, String to) {
        boolean moved = assignment.move(shard, member(to).index);
        wake();
        return moved;
    }

    /**
     * The member's session expired: its shards are taken from it at once and granted to the others; it learns that
     * it lost them when it next polls, and rejoins the group once it is no longer cut off.
     */
    boolean expire(String name) {
        Member m = member(name);
        if (!m.joined || m.out) {
            return false;
        }
        m.out = true;
        Set<Integer> lost = assignment.takeAll(m.index);
        lost.forEach(changed::accept);
        trace.accept("group: " + name + "'s session expired" + (lost.isEmpty() ? "" : "; it loses shards " + lost));
        if (!lost.isEmpty()) {
            m.post(() -> {
                trace.accept("group: " + m.name + " learns that it lost shards " + lost);
                m.listener.lost(lost);
            });
        }
        assignment.grantUnowned();
        wake();
        return true;
    }

    /**
     * Wakes the members that were sent events. Called at the end of every change of the group's state, never in the
     * middle: taking a member's lock may let other workers run, and they must see the change whole.
     */
    private void wake() {
        List<Member> woken = new ArrayList<>(toWake);
        toWake.clear();
        for (Member m : woken) {
            m.signal();
        }
    }

    private Member member(String name) {
        for (Member m : members) {
            if (m.name.equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("no member " + name);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(assignment.toString());
        for (int i = 0; i < shards; i++) {
            sb.append(stalledShard[i] ? " stalled " + i : "");
        }
        for (Member m : members) {
            sb.append(' ').append(m.name).append(m.joined ? "" : " left").append(m.out ? " out" : "");
        }
        return sb.toString();
    }

    private final class Member implements ShardedLeaderTransport {
        final int index;
        final String name;
        final Lock lock = sched.newLock();
        final Condition posted = lock.newCondition();
        final ArrayDeque<Runnable> events = new ArrayDeque<>();
        Listener listener;
        boolean joined;
        /** Expired: given no shard until it polls again while not cut off. */
        boolean out;

        Member(int index, String name) {
            this.index = index;
            this.name = name;
        }

        /**
         * Whether the group may give it shards: it joined, its session did not expire, and it reaches the group (a
         * member cut off from the coordinator takes no part in a rebalance: an assignment cannot reach it).
         */
        boolean eligible() {
            return joined && !out && !cutOff.test(name);
        }

        /** Queues an event; the member is woken by {@link #wake()}, once the group's change is complete. */
        void post(Runnable event) {
            events.add(event);
            toWake.add(this);
        }

        void signal() {
            lock.lock();
            try {
                posted.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public int shards() {
            return shards;
        }

        @Override
        public void start(Listener listener) {
            this.listener = listener;
            joined = true;
            assignment.joined(index);
            wake();
        }

        @Override
        public void poll(Duration timeout) {
            if (out && joined && !cutOff.test(name)) {
                out = false; // reaches the group again: rejoins as a new member
                trace.accept("group: " + name + " rejoins");
                assignment.joined(index);
                wake();
            }
            List<Runnable> todo = new ArrayList<>();
            lock.lock();
            try {
                long left = timeout.toNanos();
                while (events.isEmpty() && left > 0) {
                    left = posted.awaitNanos(left);
                }
                todo.addAll(events);
                events.clear();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                lock.unlock();
            }
            for (Runnable r : todo) {
                r.run();
            }
        }

        @Override
        public void publish(int shard, Heartbeat heartbeat) {
            if (assignment.owner(shard) == index && !cutOff.test(name) && !stalledShard[shard]) {
                Listener l = listener;
                post(() -> l.heartbeat(shard, heartbeat));
                wake();
            }
        }

        @Override
        public void close() {
            if (!joined) {
                return;
            }
            joined = false;
            Set<Integer> had = assignment.takeAll(index);
            had.forEach(changed::accept);
            events.clear();
            trace.accept("group: " + name + " left" + (had.isEmpty() ? "" : ", releasing shards " + had));
            if (!had.isEmpty() && listener != null) {
                listener.revoked(had); // as a Kafka consumer's close does; its harvests have stopped by now
            }
            assignment.grantUnowned();
            wake();
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
