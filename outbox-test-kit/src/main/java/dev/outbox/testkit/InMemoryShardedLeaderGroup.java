package dev.outbox.testkit;

import dev.outbox.OutboxShards;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
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
    private final ShardAssignment assignment;
    private final boolean[] stalled;

    /**
     * @param shards the number of shards (the leader topic's partitions)
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link OutboxShards#MAX_SHARDS}
     */
    public InMemoryShardedLeaderGroup(int shards) {
        this.shards = OutboxShards.checkCount(shards);
        this.stalled = new boolean[shards];
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
                to.events.add(() -> to.listener.assigned(Set.of(shard)));
            }

            @Override
            public void revoking(int shard, int member) {
                Member old = members.get(member);
                old.events.add(() -> {
                    old.listener.revoked(Set.of(shard)); // blocks until drained: outside the group's lock
                    synchronized (InMemoryShardedLeaderGroup.this) {
                        assignment.released(shard, member);
                    }
                });
            }

            @Override
            public int pick(int from, int to, List<Integer> candidates) {
                return candidates.size() - 1; // the highest numbered
            }
        });
    }

    /**
     * A new member's transport; it joins the group when its dispatcher starts it.
     *
     * @return the transport to give one dispatcher; its member number is the count of earlier calls
     */
    public synchronized ShardedLeaderTransport newMember() {
        Member m = new Member(members.size());
        members.add(m);
        return m;
    }

    /**
     * The number of the member that owns {@code shard} (a revoked shard until its drain ended), or -1.
     *
     * @param shard the shard, from 0 to the shard count - 1
     * @return the owner's member number, or -1 if no member owns the shard now
     * @throws IllegalArgumentException if {@code shard} is out of range
     */
    public synchronized int owner(int shard) {
        return assignment.owner(OutboxShards.checkIndex(shard, shards));
    }

    /**
     * The shards member {@code member} owns.
     *
     * @param member a member number (see {@link #newMember()})
     * @return a sorted snapshot of its shards, empty if it owns none (or there is no such member); the caller may
     *         change it
     */
    public synchronized Set<Integer> shardsOf(int member) {
        return assignment.owned(member);
    }

    /**
     * The number of members that joined, have not left and whose session has not expired.
     *
     * @return the count, from 0 to the number of {@link #newMember()} calls
     */
    public synchronized int size() {
        return (int) members.stream().filter(Member::eligible).count();
    }

    /**
     * Moves {@code shard} to member {@code to} by an orderly revocation: its owner drains, then {@code to} is
     * granted it (or, if {@code to} is no longer in the group by then, the least loaded member). Returns at once;
     * the move completes as the members poll.
     *
     * @param shard the shard to move, from 0 to the shard count - 1
     * @param to    the member number of its next owner
     * @return false if the shard has no owner or is already being revoked
     * @throws IndexOutOfBoundsException if there is no member {@code to}
     * @throws IllegalArgumentException  if {@code shard} is out of range
     */
    public synchronized boolean move(int shard, int to) {
        Objects.checkIndex(to, members.size());
        return assignment.move(OutboxShards.checkIndex(shard, shards), to);
    }

    /**
     * Member {@code member}'s session expires: its shards are taken from it at once and granted to the other
     * members; it learns that it lost them when it next polls, and rejoins the group then.
     *
     * @param member the member number of the member whose session expires
     * @return false if the member is not in the group
     * @throws IndexOutOfBoundsException if there is no such member
     */
    public synchronized boolean expire(int member) {
        Member m = members.get(member);
        if (!m.eligible()) {
            return false;
        }
        m.out = true;
        Set<Integer> lost = assignment.takeAll(member);
        if (!lost.isEmpty()) {
            m.events.add(() -> m.listener.lost(lost));
        }
        m.events.add(m::rejoin);
        assignment.grantUnowned();
        return true;
    }

    /**
     * While true, heartbeats on {@code shard}'s channel are lost: its leader fences itself.
     *
     * @param shard the shard, from 0 to the shard count - 1
     * @param stall {@code true} to drop the shard's heartbeats from now on, {@code false} to deliver them again
     * @throws IllegalArgumentException if {@code shard} is out of range
     */
    public synchronized void stallHeartbeats(int shard, boolean stall) {
        stalled[OutboxShards.checkIndex(shard, shards)] = stall;
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
                    assignment.joined(index);
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
                assignment.joined(index);
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
                if (assignment.owner(shard) == index && !stalled[shard]) {
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
                had = assignment.takeAll(index);
            }
            events.clear();
            if (!had.isEmpty() && listener != null) {
                listener.revoked(had); // as a Kafka consumer's close does
            }
            synchronized (InMemoryShardedLeaderGroup.this) {
                assignment.grantUnowned();
            }
        }

        @Override
        public String toString() {
            return "in-memory shard group member " + index;
        }
    }
}
