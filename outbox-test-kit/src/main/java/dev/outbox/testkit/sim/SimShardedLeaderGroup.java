package dev.outbox.testkit.sim;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
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
    private final java.util.function.Consumer<String> trace;
    private final boolean grantBeforeDrain;
    private final List<Member> members = new ArrayList<>();
    private final Member[] owner;
    private final boolean[] revoking;
    private final Member[] target;
    private final boolean[] stalledShard;
    /** Members with events queued since the last {@link #wake()}. */
    private final List<Member> toWake = new ArrayList<>();

    /**
     * @param cutOff           whether a member is cut off from the group (its heartbeats are lost, it cannot rejoin)
     * @param changed          told of every change to a shard's assignment (for the G4 check)
     * @param trace            told what the group does, for the run's trace
     * @param grantBeforeDrain the planted bug: grant a revoked shard to its next owner at once, without waiting
     *                         for the old owner's drain
     */
    SimShardedLeaderGroup(SimScheduler sched, int shards, Predicate<String> cutOff, IntConsumer changed,
                          java.util.function.Consumer<String> trace, boolean grantBeforeDrain) {
        this.sched = sched;
        this.shards = shards;
        this.cutOff = cutOff;
        this.changed = changed;
        this.trace = trace;
        this.grantBeforeDrain = grantBeforeDrain;
        this.owner = new Member[shards];
        this.revoking = new boolean[shards];
        this.target = new Member[shards];
        this.stalledShard = new boolean[shards];
    }

    ShardedLeaderTransport newMember(String name) {
        Member m = new Member(name);
        members.add(m);
        return m;
    }

    /** The owner of {@code shard}'s name, or null. */
    String owner(int shard) {
        return owner[shard] == null ? null : owner[shard].name;
    }

    /** The shards {@code name} owns. */
    Set<Integer> owned(String name) {
        Set<Integer> s = new TreeSet<>();
        for (int i = 0; i < shards; i++) {
            if (owner[i] != null && owner[i].name.equals(name)) {
                s.add(i);
            }
        }
        return s;
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
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < shards; i++) {
            if (owner[i] != null && !revoking[i]) {
                l.add(i);
            }
        }
        return l;
    }

    /**
     * Whether {@code name} has acted on everything the group told it: no event waits for its poll, and no revocation
     * of one of its shards is under way.
     */
    boolean settled(String name) {
        Member m = member(name);
        if (!m.events.isEmpty()) {
            return false;
        }
        for (int i = 0; i < shards; i++) {
            if (owner[i] == m && revoking[i]) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code shard}'s heartbeats are lost (its channel stalls), for the owner and anyone after it. */
    void stallHeartbeats(int shard, boolean stalled) {
        stalledShard[shard] = stalled;
    }

    /**
     * An orderly move of {@code shard} to {@code to}: its owner is told it is revoked, and once that returned (the
     * drain), the shard is granted to {@code to} (or, if {@code to} left meanwhile, to the least loaded member).
     */
    boolean move(int shard, String to) {
        Member old = owner[shard];
        if (old == null || revoking[shard]) {
            return false;
        }
        target[shard] = member(to);
        revoke(shard);
        wake();
        return true;
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
        Set<Integer> lost = new TreeSet<>();
        for (int i = 0; i < shards; i++) {
            if (owner[i] == m) {
                owner[i] = null;
                revoking[i] = false;
                lost.add(i);
                changed.accept(i);
            }
            if (target[i] == m) {
                target[i] = null;
            }
        }
        trace.accept("group: " + name + "'s session expired" + (lost.isEmpty() ? "" : "; it loses shards " + lost));
        if (!lost.isEmpty()) {
            m.post(() -> {
                trace.accept("group: " + m.name + " learns that it lost shards " + lost);
                m.listener.lost(lost);
            });
        }
        grantUnowned();
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

    private void revoke(int shard) {
        Member old = owner[shard];
        revoking[shard] = true;
        changed.accept(shard);
        trace.accept("group: revokes shard " + shard + " from " + old.name + (target[shard] == null ? ""
                : " for " + target[shard].name));
        if (grantBeforeDrain) {
            // The planted bug: the next owner is given the shard while the old one may still be draining.
            old.post(() -> old.listener.revoked(Set.of(shard)));
            released(shard, old);
            return;
        }
        old.post(() -> {
            old.listener.revoked(Set.of(shard));
            trace.accept("group: " + old.name + " released shard " + shard);
            released(shard, old);
            wake();
        });
    }

    /** {@code old}'s revocation of {@code shard} returned: the shard goes on, unless it already did. */
    private void released(int shard, Member old) {
        if (owner[shard] != old || !revoking[shard]) {
            return; // taken from it meanwhile (its session expired, or it left)
        }
        owner[shard] = null;
        revoking[shard] = false;
        Member to = target[shard];
        target[shard] = null;
        if (to != null && to.eligible()) {
            grant(shard, to);
        } else {
            grantUnowned();
        }
    }

    private void grant(int shard, Member to) {
        owner[shard] = to;
        changed.accept(shard);
        trace.accept("group: grants shard " + shard + " to " + to.name);
        to.post(() -> to.listener.assigned(Set.of(shard)));
    }

    /** Grants every shard without an owner to the least loaded eligible member (the first such, on a tie). */
    private void grantUnowned() {
        for (int i = 0; i < shards; i++) {
            if (owner[i] == null) {
                Member to = leastLoaded();
                if (to == null) {
                    return;
                }
                grant(i, to);
            }
        }
    }

    private Member leastLoaded() {
        Member best = null;
        int fewest = Integer.MAX_VALUE;
        for (Member m : members) {
            if (m.eligible()) {
                int n = load(m);
                if (n < fewest) {
                    best = m;
                    fewest = n;
                }
            }
        }
        return best;
    }

    /** The shards {@code m} owns or is about to be given. */
    private int load(Member m) {
        int n = 0;
        for (int i = 0; i < shards; i++) {
            if (owner[i] == m && !revoking[i] || target[i] == m) {
                n++;
            }
        }
        return n;
    }

    /**
     * A member (re)joined: unowned shards are granted, then the newcomer takes shards from the busiest members
     * until it has its share, each by an orderly move (which of the busiest member's shards: the simulation's
     * choice).
     */
    private void joined(Member m) {
        grantUnowned();
        int live = live().size();
        int share = live == 0 ? 0 : shards / live;
        while (load(m) < share) {
            Member busiest = null;
            for (Member c : members) {
                if (c != m && c.eligible() && (busiest == null || load(c) > load(busiest))) {
                    busiest = c;
                }
            }
            if (busiest == null || load(busiest) <= share) {
                return;
            }
            List<Integer> theirs = new ArrayList<>();
            for (int i = 0; i < shards; i++) {
                if (owner[i] == busiest && !revoking[i]) {
                    theirs.add(i);
                }
            }
            if (theirs.isEmpty()) {
                return; // all it will have is still on its way to it
            }
            int s = theirs.get(sched.choose(theirs.size(), "group: which shard of " + busiest.name + " moves to "
                    + m.name + " " + theirs));
            target[s] = m;
            revoke(s);
        }
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < shards; i++) {
            sb.append(i).append('=').append(owner[i] == null ? "-" : owner[i].name).append(revoking[i] ? ">" : "")
                    .append(target[i] == null ? "" : target[i].name).append(stalledShard[i] ? "!" : "").append(' ');
        }
        for (Member m : members) {
            sb.append(m.name).append(m.joined ? "" : " left").append(m.out ? " out" : "").append(' ');
        }
        return sb.toString();
    }

    private final class Member implements ShardedLeaderTransport {
        final String name;
        final Lock lock = sched.newLock();
        final Condition posted = lock.newCondition();
        final ArrayDeque<Runnable> events = new ArrayDeque<>();
        Listener listener;
        boolean joined;
        /** Expired: given no shard until it polls again while not cut off. */
        boolean out;

        Member(String name) {
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
            joined(this);
            wake();
        }

        @Override
        public void poll(Duration timeout) {
            if (out && joined && !cutOff.test(name)) {
                out = false; // reaches the group again: rejoins as a new member
                trace.accept("group: " + name + " rejoins");
                joined(this);
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
            if (owner[shard] == this && !cutOff.test(name) && !stalledShard[shard]) {
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
            Set<Integer> had = new TreeSet<>();
            for (int i = 0; i < shards; i++) {
                if (owner[i] == this) {
                    owner[i] = null;
                    revoking[i] = false;
                    had.add(i);
                    changed.accept(i);
                }
                if (target[i] == this) {
                    target[i] = null;
                }
            }
            events.clear();
            trace.accept("group: " + name + " left" + (had.isEmpty() ? "" : ", releasing shards " + had));
            if (!had.isEmpty() && listener != null) {
                listener.revoked(had); // as a Kafka consumer's close does; its harvests have stopped by now
            }
            grantUnowned();
            wake();
        }

        @Override
        public String toString() {
            return name;
        }
    }
}
