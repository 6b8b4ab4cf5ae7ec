package dev.outbox.testkit;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.LeaderTransport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An in-memory leader group: the NELI transport of several dispatchers in one JVM, with the faults a test
 * needs — orderly hand-over, lost leadership, stalled heartbeats. At most one member owns the group at a
 * time, and a new owner is assigned only after the previous one has processed its revocation or loss (what
 * correctly tuned Kafka timeouts give a real group).
 *
 * <p>Thread-safe. Each member's callbacks run on the thread that polls it, as the port requires.
 */
public final class InMemoryLeaderGroup {
    private final List<Member> members = new ArrayList<>();
    private Member owner;
    private int nextIndex;

    /**
     * A new member's transport; it joins the group when its dispatcher starts it. Members are numbered in the
     * order this method created them.
     *
     * @return the transport to give one dispatcher; its member number is the count of earlier calls
     */
    public synchronized LeaderTransport newMember() {
        Member m = new Member();
        members.add(m);
        return m;
    }

    /**
     * Number (in order of {@link #newMember()} calls) of the member that owns the group, or -1.
     *
     * @return the owner's member number, or -1 while nobody owns the group (for example between a
     *         {@link #loseOwner()} and the next {@link #assignNext()})
     */
    public synchronized int ownerIndex() {
        return owner == null ? -1 : members.indexOf(owner);
    }

    /**
     * Number of members that joined and have not left.
     *
     * @return the count of members whose transport was started and not closed
     */
    public synchronized int size() {
        return (int) members.stream().filter(m -> m.joined).count();
    }

    /**
     * Orderly hand-over: the owner is revoked (its dispatcher drains), then the next member is assigned.
     *
     * @return whether there was an owner
     */
    public synchronized boolean reassign() {
        Member old = owner;
        if (old == null) {
            return false;
        }
        old.events.add(() -> {
            old.listener.revoked();
            synchronized (InMemoryLeaderGroup.this) {
                if (owner == old) {
                    owner = null;
                    assignNext(old);
                }
            }
        });
        return true;
    }

    /**
     * The owner loses the group without an orderly hand-over (its session expired). Nobody owns the group
     * until {@link #assignNext()}: the test decides when, typically once the old owner's sends completed.
     *
     * @return whether there was an owner
     */
    public synchronized boolean loseOwner() {
        Member old = owner;
        if (old == null) {
            return false;
        }
        owner = null;
        old.events.add(() -> old.listener.lost());
        return true;
    }

    /** Assigns the group to the next member in rotation if nobody owns it. */
    public synchronized void assignNext() {
        if (owner == null) {
            assignNext(null);
        }
    }

    /**
     * While true, the owner's heartbeats are dropped, as if its connection stalled: it fences itself.
     *
     * @param stalled {@code true} to drop every member's heartbeats from now on (whoever owns the group),
     *                {@code false} to deliver them again
     */
    public synchronized void stallHeartbeats(boolean stalled) {
        for (Member m : members) {
            m.stalled = stalled;
        }
    }

    private void assignNext(Member after) {
        if (members.isEmpty()) {
            return;
        }
        int start = after == null ? nextIndex : members.indexOf(after) + 1;
        for (int i = 0; i < members.size(); i++) {
            Member candidate = members.get(Math.floorMod(start + i, members.size()));
            if (candidate.joined && (candidate != after || size() == 1)) {
                owner = candidate;
                nextIndex = members.indexOf(candidate) + 1;
                candidate.events.add(() -> candidate.listener.assigned());
                return;
            }
        }
    }

    private final class Member implements LeaderTransport {
        private final BlockingQueue<Runnable> events = new LinkedBlockingQueue<>();
        private volatile Listener listener;
        private volatile boolean stalled;
        private boolean joined; // guarded by the group

        @Override
        public void start(Listener listener) {
            this.listener = listener;
            synchronized (InMemoryLeaderGroup.this) {
                joined = true;
                if (owner == null) {
                    assignNext(null);
                }
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
        public void publish(Heartbeat heartbeat) {
            synchronized (InMemoryLeaderGroup.this) {
                if (owner == this && !stalled) {
                    events.add(() -> listener.heartbeat(heartbeat));
                }
            }
        }

        @Override
        public void close() {
            boolean wasOwner;
            synchronized (InMemoryLeaderGroup.this) {
                wasOwner = owner == this;
                joined = false;
                if (wasOwner) {
                    owner = null;
                }
            }
            if (wasOwner && listener != null) {
                listener.revoked();
            }
            synchronized (InMemoryLeaderGroup.this) {
                if (owner == null) {
                    assignNext(null);
                }
            }
            events.clear();
        }
    }
}
