package dev.outbox.testkit;

import dev.outbox.OutboxShards;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An in-memory shard leaders' group: the {@link ShardedLeaderTransport} of several sharded dispatchers in one JVM,
 * modelled on Kafka's group coordinator over a leader topic with one partition per shard. A member that joins is
 * given the shards nobody owns, then takes shards from the busiest members until it has its share
 * ({@code shards / members}), each by an orderly move; a member that leaves (its transport closes) releases its
 * shards to the least loaded members. An orderly move is a barrier: the shard is granted to its next owner only once
 * the old owner's {@code revoked} callback returned (its drain). A test may also {@link #move} a shard,
 * {@link #expire} a member's session (its shards go to the others at once; it learns that it lost them when it next
 * polls, and rejoins then), and {@link #stallHeartbeats} of a shard (its leader fences itself). Members are numbered
 * in the order {@link #newMember()} created them.
 *
 * <p>Thread-safe. Each member's callbacks run on the thread that polls it, as the port requires.
 */
public final class InMemoryShardedLeaderGroup {
    private final int shards;
    private final List<Member> members = new ArrayList<>();
    private final Member[] owner;
    private final boolean[] revoking;
    private final Member[] target;
    private final boolean[] stalled;

    /**
     * @param shards the number of shards (the leader topic's partitions)
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link OutboxShards#MAX_SHARDS}
     */
    public InMemoryShardedLeaderGroup(int shards) {
        this.shards = OutboxShards.checkCount(shards);
        this.owner = new Member[shards];
        this.revoking = new boolean[shards];
        this.target = new Member[shards];
        this.stalled = new boolean[shards];
    }

    /** A new member's transport; it joins the group when its dispatcher starts it. */
    public synchronized ShardedLeaderTransport newMember() {
        Member m = new Member(members.size());
        members.add(m);
        return m;
    }

    /** The number of the member that owns {@code shard} (a revoked shard until its drain ended), or -1. */
    public synchronized int owner(int shard) {
        Member m = owner[OutboxShards.checkIndex(shard, shards)];
        return m == null ? -1 : m.index;
    }

    /** The shards member {@code member} owns. */
    public synchronized Set<Integer> shardsOf(int member) {
        Set<Integer> s = new TreeSet<>();
        for (int i = 0; i < shards; i++) {
            if (owner[i] != null && owner[i].index == member) {
                s.add(i);
            }
        }
        return s;
    }

    /** The number of members that joined, have not left and whose session has not expired. */
    public synchronized int size() {
        return (int) members.stream().filter(Member::eligible).count();
    }

    /**
     * Moves {@code shard} to member {@code to} by an orderly revocation: its owner drains, then {@code to} is
     * granted it (or, if {@code to} is no longer in the group by then, the least loaded member).
     *
     * @return false if the shard has no owner or is already being revoked
     */
    public synchronized boolean move(int shard, int to) {
        OutboxShards.checkIndex(shard, shards);
        if (owner[shard] == null || revoking[shard]) {
            return false;
        }
        target[shard] = members.get(to);
        revoke(shard);
        return true;
    }

    /**
     * Member {@code member}'s session expires: its shards are taken from it at once and granted to the other
     * members; it learns that it lost them when it next polls, and rejoins the group then.
     *
     * @return false if the member is not in the group
     */
    public synchronized boolean expire(int member) {
        Member m = members.get(member);
        if (!m.eligible()) {
            return false;
        }
        m.out = true;
        Set<Integer> lost = takeFrom(m);
        if (!lost.isEmpty()) {
            m.events.add(() -> m.listener.lost(lost));
        }
        m.events.add(() -> m.rejoin());
        grantUnowned();
        return true;
    }

    /** While true, heartbeats on {@code shard}'s channel are lost: its leader fences itself. */
    public synchronized void stallHeartbeats(int shard, boolean stall) {
        stalled[OutboxShards.checkIndex(shard, shards)] = stall;
    }

    private Set<Integer> takeFrom(Member m) {
        Set<Integer> had = new TreeSet<>();
        for (int i = 0; i < shards; i++) {
            if (owner[i] == m) {
                owner[i] = null;
                revoking[i] = false;
                had.add(i);
            }
            if (target[i] == m) {
                target[i] = null;
            }
        }
        return had;
    }

    private void revoke(int shard) {
        Member old = owner[shard];
        revoking[shard] = true;
        old.events.add(() -> {
            old.listener.revoked(Set.of(shard)); // blocks until drained: outside the group's lock
            released(shard, old);
        });
    }

    private synchronized void released(int shard, Member old) {
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
        to.events.add(() -> to.listener.assigned(Set.of(shard)));
    }

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
        for (Member m : members) {
            if (m.eligible() && (best == null || load(m) < load(best))) {
                best = m;
            }
        }
        return best;
    }

    private int load(Member m) {
        int n = 0;
        for (int i = 0; i < shards; i++) {
            if (owner[i] == m && !revoking[i] || target[i] == m) {
                n++;
            }
        }
        return n;
    }

    /** A member (re)joined: it is given the unowned shards, then takes its share from the busiest members. */
    private void joined(Member m) {
        grantUnowned();
        int share = shards / size();
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
            int moved = -1;
            for (int i = shards - 1; i >= 0 && moved < 0; i--) {
                if (owner[i] == busiest && !revoking[i]) {
                    moved = i;
                }
            }
            if (moved < 0) {
                return;
            }
            target[moved] = m;
            revoke(moved);
        }
    }

    private final class Member implements ShardedLeaderTransport {
        private final int index;
        private final BlockingQueue<Runnable> events = new LinkedBlockingQueue<>();
        private volatile Listener listener;
        private boolean joined; // guarded by the group
        private boolean out; // its session expired; guarded by the group

        Member(int index) {
            this.index = index;
        }

        boolean eligible() {
            return joined && !out;
        }

        void rejoin() {
            synchronized (InMemoryShardedLeaderGroup.this) {
                if (joined && out) {
                    out = false;
                    joined(this);
                }
            }
        }

        @Override
        public int shards() {
            return shards;
        }

        @Override
        public void start(Listener listener) {
            this.listener = listener;
            synchronized (InMemoryShardedLeaderGroup.this) {
                joined = true;
                joined(this);
            }
        }

        @Override
        public void poll(Duration timeout) {
            try {
                Runnable event = events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
                while (event != null) {
                    event.run();
                    event = events.poll();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void publish(int shard, Heartbeat heartbeat) {
            synchronized (InMemoryShardedLeaderGroup.this) {
                if (owner[shard] == this && !stalled[shard]) {
                    events.add(() -> listener.heartbeat(shard, heartbeat));
                }
            }
        }

        @Override
        public void close() {
            Set<Integer> had;
            synchronized (InMemoryShardedLeaderGroup.this) {
                if (!joined) {
                    return;
                }
                joined = false;
                had = takeFrom(this);
            }
            events.clear();
            if (!had.isEmpty() && listener != null) {
                listener.revoked(had); // as a Kafka consumer's close does
            }
            synchronized (InMemoryShardedLeaderGroup.this) {
                grantUnowned();
            }
        }

        @Override
        public String toString() {
            return "in-memory shard group member " + index;
        }
    }
}
