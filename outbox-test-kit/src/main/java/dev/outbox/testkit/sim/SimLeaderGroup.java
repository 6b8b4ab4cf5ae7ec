package dev.outbox.testkit.sim;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * The leader election for a simulation, as Kafka's group coordinator does it for NELI: one member owns the
 * leader partition; the others stand by. Events reach a member when it polls, as they do in Kafka. Only the
 * simulation's workers call it.
 */
final class SimLeaderGroup {
    private final SimScheduler sched;
    private final List<Member> members = new ArrayList<>();
    private final java.util.function.Predicate<String> cutOff;
    private Member owner;

    /** @param cutOff whether a member's heartbeats are lost (it is partitioned from the group) */
    SimLeaderGroup(SimScheduler sched, java.util.function.Predicate<String> cutOff) {
        this.sched = sched;
        this.cutOff = cutOff;
    }

    LeaderTransport newMember(String name) {
        Member m = new Member(name);
        members.add(m);
        return m;
    }

    /** The owner's name, or null. */
    String owner() {
        return owner == null ? null : owner.name;
    }

    /** An orderly hand-over: the owner is told it is revoked, and when it has returned, the next is assigned. */
    boolean revoke() {
        Member old = owner;
        if (old == null) {
            return false;
        }
        old.post(() -> {
            old.listener.revoked();
            if (owner == old) {
                owner = null;
                assignNext(old);
            }
        });
        return true;
    }

    /**
     * The owner is dropped from the group at once (its session expired): the next member is assigned now, and the
     * old owner learns that it lost the partition when it next polls.
     */
    boolean expire() {
        Member old = owner;
        if (old == null) {
            return false;
        }
        owner = null;
        old.post(() -> old.listener.lost());
        assignNext(old);
        return true;
    }

    private void assignNext(Member after) {
        int start = after == null ? 0 : members.indexOf(after) + 1;
        for (int i = 0; i < members.size(); i++) {
            Member c = members.get(Math.floorMod(start + i, members.size()));
            if (c.joined && (c != after || members.stream().filter(m -> m.joined).count() == 1)) {
                owner = c;
                c.post(() -> c.listener.assigned());
                return;
            }
        }
    }

    private final class Member implements LeaderTransport {
        final String name;
        final Lock lock = sched.newLock();
        final Condition posted = lock.newCondition();
        final ArrayDeque<Runnable> events = new ArrayDeque<>();
        Listener listener;
        boolean joined;

        Member(String name) {
            this.name = name;
        }

        void post(Runnable event) {
            events.add(event); // at once, in the order the group decided: taking the lock may let others run
            lock.lock();
            try {
                posted.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void start(Listener listener) {
            this.listener = listener;
            joined = true;
            if (owner == null) {
                assignNext(null);
            }
        }

        @Override
        public void poll(Duration timeout) {
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
        public void publish(Heartbeat heartbeat) {
            if (owner == this && !cutOff.test(name)) {
                Listener l = listener;
                post(() -> l.heartbeat(heartbeat));
            }
        }

        @Override
        public void close() {
            boolean wasOwner = owner == this;
            joined = false;
            if (wasOwner) {
                owner = null;
                listener.revoked();
                assignNext(this);
            }
        }
    }
}
