package dev.outbox.testkit;

import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract every {@link ShardedLeaderTransport} passes, over six shards: members each poll their transport on a
 * thread of their own and publish a heartbeat per shard they hold on every poll; each records, in one shared log,
 * when it gains a shard (the assignment) and when it gives one up (the end of the revocation, after a simulated
 * drain, or the loss). The assertions:
 * <ul>
 *   <li>exclusivity per shard: replaying the log, no shard is ever gained while another member holds it — so a
 *       hand-over's old owner drained (or lost the shard) before the new one was given it;</li>
 *   <li>even spread: as members join and leave, every live member ends up with its fair share (⌊6/<i>w</i>⌋ or
 *       ⌈6/<i>w</i>⌉ shards), all six held;</li>
 *   <li>every shard's heartbeats come back to its holder, on that shard;</li>
 *   <li>a crashed member's shards (gone without closing its transport) move once its leases or session lapsed, not
 *       before.</li>
 * </ul>
 * A subclass says how to make the members of one group ({@link #newGroup}) and what its timings promise: a dozen
 * lines per transport, whether its shards are leases in a database or partitions handed out by Kafka's group
 * coordinator.
 *
 * <p>Not for parallel execution within one class.
 */
public abstract class ShardedLeaderTransportContract {
    /** The number of shards every group of this contract has. */
    protected static final int SHARDS = 6;

    private final List<Member> members = new ArrayList<>();
    /** "+m s" when member m gained shard s, "-m s" when it gave it up; in the order they happened. */
    private final List<String> log = new ArrayList<>();
    private Group group;

    /** A contract run; subclasses add their group. */
    protected ShardedLeaderTransportContract() {
    }

    /** The members of one sharded outbox's shard leader election. */
    public interface Group {
        /**
         * A new member's transport over {@link #SHARDS} shards, not started.
         *
         * @param name the member's name, for diagnostics
         * @return a transport of this group
         */
        ShardedLeaderTransport member(String name);

        /**
         * Drops {@code transport} as a killed process would: without leaving the group. The default does nothing (a
         * transport that holds no resource of its own is simply never polled again).
         *
         * @param transport a member's transport, no longer polled
         */
        default void abandon(ShardedLeaderTransport transport) {
        }
    }

    /**
     * The timings a run uses and what they promise.
     *
     * @param pollInterval         how long each poll waits
     * @param settle               the longest the members may take to spread the shards evenly after one joined or
     *                             left
     * @param crashTakeOverAtLeast a crashed member's shards move no sooner than this
     * @param crashTakeOverAtMost  ... and all of them have moved within this
     */
    public record Timings(Duration pollInterval, Duration settle, Duration crashTakeOverAtLeast,
                          Duration crashTakeOverAtMost) {
        /**
         * Checks that no component is null.
         *
         * @param pollInterval         the poll interval
         * @param settle               the longest spread
         * @param crashTakeOverAtLeast the shortest crash take-over
         * @param crashTakeOverAtMost  the longest crash take-over
         * @throws NullPointerException if a component is null
         */
        public Timings {
            Objects.requireNonNull(pollInterval, "pollInterval");
            Objects.requireNonNull(settle, "settle");
            Objects.requireNonNull(crashTakeOverAtLeast, "crashTakeOverAtLeast");
            Objects.requireNonNull(crashTakeOverAtMost, "crashTakeOverAtMost");
        }
    }

    /**
     * A new group of {@link #SHARDS} shards, fresh for one test.
     *
     * @return the group
     */
    protected abstract Group newGroup();

    /**
     * The timings this run's transports were built for.
     *
     * @return the timings
     */
    protected abstract Timings timings();

    /** Closes the members and fails on a member's failure or a misrouted heartbeat. */
    @AfterEach
    final void closeMembers() {
        members.forEach(Member::close);
        System.out.println("shard log: " + logCopy());
        List<Member> ran = List.copyOf(members);
        members.clear(); // a subclass may run all tests on one instance
        synchronized (this) {
            log.clear();
        }
        group = null;
        for (Member m : ran) {
            assertThat(m.failure).as("member %s failed", m.name).isNull();
            assertThat(m.misrouted).as("heartbeats of another shard heard by %s", m.name).isEmpty();
        }
    }

    private Member join(String name) {
        if (group == null) {
            group = newGroup();
        }
        Member m = new Member(name, group.member(name));
        members.add(m);
        m.thread.start();
        return m;
    }

    private synchronized void record(String event) {
        log.add(event);
    }

    private synchronized List<String> logCopy() {
        return new ArrayList<>(log);
    }

    /** Replays the log: no shard is ever gained by one member while another holds it, only its holder gives it up. */
    private synchronized void assertExclusive() {
        Map<Integer, String> holder = new HashMap<>();
        for (String e : log) {
            String who = e.substring(1, e.indexOf(' '));
            int shard = Integer.parseInt(e.substring(e.indexOf(' ') + 1));
            if (e.charAt(0) == '+') {
                assertThat(holder.get(shard)).as("shard %d gained by %s while held, in %s", shard, who, log).isNull();
                holder.put(shard, who);
            } else {
                assertThat(holder.remove(shard)).as("shard %d given up by %s, in %s", shard, who, log).isEqualTo(who);
            }
        }
    }

    /** Whether the live members' shards are disjoint, cover all, and each member holds its fair share. */
    private static boolean spreadEvenly(List<Member> live) {
        Set<Integer> all = new TreeSet<>();
        int total = 0;
        int floor = SHARDS / live.size();
        int ceil = floor + (SHARDS % live.size() == 0 ? 0 : 1);
        for (Member m : live) {
            Set<Integer> s = m.held();
            if (s.size() < floor || s.size() > ceil) {
                return false;
            }
            total += s.size();
            all.addAll(s);
        }
        return total == SHARDS && all.size() == SHARDS;
    }

    private long awaitSpread(List<Member> live, String what) {
        long from = System.nanoTime();
        Await.untilOrFail(() -> spreadEvenly(live), timings().settle(), () -> what + ": " + live + ", log " + logCopy());
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - from);
    }

    /** Shards spread evenly over one, two and three members, and again when one leaves; exclusive throughout. */
    @Test
    void shardsSpreadEvenlyAsMembersJoinAndLeave() {
        List<Member> live = new ArrayList<>();
        live.add(join("m0"));
        long alone = awaitSpread(live, "six shards to the only member");
        live.add(join("m1"));
        long two = awaitSpread(live, "three shards each for two members");
        live.add(join("m2"));
        long three = awaitSpread(live, "two shards each for three members");
        Await.untilOrFail(() -> live.stream().allMatch(m -> m.held().stream().allMatch(s -> m.ownHeartbeats(s) >= 3)),
                timings().settle(), () -> "each holder hears its shards' heartbeats: " + live);

        Member leaving = live.remove(1);
        Map<String, Set<Integer>> before = new HashMap<>();
        live.forEach(m -> before.put(m.name, m.held()));
        leaving.close();
        long left = awaitSpread(live, "three shards each for the two left");
        for (Member m : live) {
            assertThat(m.held()).as("%s keeps what it had", m.name).containsAll(before.get(m.name));
        }
        System.out.printf("shards: six shards to one member in %d ms, spread over two in %d ms, over three in"
                + " %d ms; after one left, over two in %d ms%n", alone, two, three, left);
        assertExclusive();
    }

    /** A crashed member's shards move to the others once its leases (or session) lapsed, not before. */
    @Test
    void crashedMembersShardsMoveOnceItsLeasesLapse() {
        List<Member> live = new ArrayList<>(List.of(join("m0"), join("m1")));
        awaitSpread(live, "three shards each for two members");
        Member crashing = live.remove(0);
        Member other = live.get(0);
        Set<Integer> itsShards = crashing.held();
        int logged = logCopy().size();
        long crashed = System.nanoTime();
        crashing.crash();
        Await.untilOrFail(() -> other.held().size() == SHARDS, timings().crashTakeOverAtMost().plusSeconds(30),
                () -> "the survivor takes the crashed member's shards: " + other);
        long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - crashed);
        List<String> after = logCopy().subList(logged, logCopy().size());
        System.out.println("a crashed member's shards " + itsShards + " moved within " + took + " ms (promised"
                + " between " + timings().crashTakeOverAtLeast().toMillis() + " and "
                + timings().crashTakeOverAtMost().toMillis() + " ms); log " + after);
        assertThat(took).isGreaterThanOrEqualTo(timings().crashTakeOverAtLeast().toMillis());
        assertThat(took).isLessThanOrEqualTo(timings().crashTakeOverAtMost().toMillis());
        assertExclusive();
    }

    /** A member's listener: records gains and losses in the shared log, counts its own heartbeats per shard. */
    private final class Recording implements ShardedLeaderTransport.Listener {
        private final Member member;

        Recording(Member member) {
            this.member = member;
        }

        @Override
        public void assigned(Set<Integer> shards) {
            shards.forEach(s -> record("+" + member.name + " " + s));
            member.change(shards, true);
        }

        @Override
        public void revoked(Set<Integer> shards) {
            member.change(shards, false);
            // a drain takes a moment: the next holder must not get the shards before this returns
            LockSupport.parkNanos(Duration.ofMillis(200).toNanos());
            shards.forEach(s -> record("-" + member.name + " " + s));
        }

        @Override
        public void lost(Set<Integer> shards) {
            member.change(shards, false);
            shards.forEach(s -> record("-" + member.name + " " + s));
        }

        @Override
        public void heartbeat(int shard, Heartbeat heartbeat) {
            if ((int) (heartbeat.sequence() % SHARDS) != shard) {
                member.misrouted.add(shard + "<-" + heartbeat);
            }
            if (heartbeat.instanceId().equals(member.id)) {
                member.heartbeats.computeIfAbsent(shard, s -> new AtomicLong()).incrementAndGet();
            }
        }
    }

    /** One member: a thread polling its transport and publishing a heartbeat per held shard on every poll. */
    private final class Member {
        final String name;
        final ShardedLeaderTransport transport;
        final UUID id = UUID.randomUUID();
        final Thread thread;
        final Map<Integer, AtomicLong> heartbeats = new ConcurrentHashMap<>();
        final Set<String> misrouted = ConcurrentHashMap.newKeySet();
        volatile Set<Integer> held = Set.of();
        volatile boolean stop;
        volatile boolean crash;
        volatile Throwable failure;

        Member(String name, ShardedLeaderTransport transport) {
            this.name = name;
            this.transport = transport;
            this.thread = new Thread(this::run, "shard-member-" + name);
            this.thread.setDaemon(true);
        }

        void change(Set<Integer> shards, boolean gained) {
            Set<Integer> now = new TreeSet<>(held);
            if (gained) {
                now.addAll(shards);
            } else {
                now.removeAll(shards);
            }
            held = Set.copyOf(now);
        }

        Set<Integer> held() {
            return new TreeSet<>(held);
        }

        private void run() {
            try {
                transport.start(new Recording(this));
                long round = 0;
                while (!stop) {
                    transport.poll(timings().pollInterval());
                    round++;
                    for (int s : held) {
                        transport.publish(s, new Heartbeat(id, round * SHARDS + s));
                    }
                }
            } catch (Throwable e) {
                failure = e;
            } finally {
                // As a dispatcher does: it stops using its shards, then leaves (or, killed, just stops).
                held.forEach(s -> record("-" + name + " " + s));
                held = Set.of();
                if (crash) {
                    group.abandon(transport);
                } else {
                    transport.close();
                }
            }
        }

        long ownHeartbeats(int shard) {
            AtomicLong n = heartbeats.get(shard);
            return n == null ? 0 : n.get();
        }

        void crash() {
            crash = true;
            close();
        }

        void close() {
            stop = true;
            try {
                thread.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            assertThat(thread.isAlive()).as("member %s stopped", name).isFalse();
        }

        @Override
        public String toString() {
            return name + held;
        }
    }
}
