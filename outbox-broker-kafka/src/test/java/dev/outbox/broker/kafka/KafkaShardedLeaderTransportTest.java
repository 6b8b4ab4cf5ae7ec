package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxException;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link KafkaShardedLeaderTransport} on the real Kafka: members in one group over a leader topic of six
 * partitions. Each member records, in one shared log, when it gains a shard (the assignment) and when it gives one
 * up (the end of the revocation, after a simulated drain): the log must show every shard held by at most one member
 * at a time. Each member publishes a heartbeat for each shard it owns on every poll (the sequence carries the
 * shard) and checks that what comes back on shard <i>i</i> was sent for shard <i>i</i>.
 */
class KafkaShardedLeaderTransportTest {
    private static final int SHARDS = 6;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(Duration.ofMillis(50))
            .heartbeatTimeout(Duration.ofSeconds(1)).drainTimeout(Duration.ofSeconds(2)).build();

    private final List<Member> members = new ArrayList<>();
    /** "+m s" when member m gained shard s, "-m s" when it gave it up; in the order they happened. */
    private final List<String> log = new ArrayList<>();

    @AfterEach
    void closeAll() {
        members.forEach(Member::close);
        for (Member m : members) {
            assertThat(m.failure).as("member %s failed", m.name).isNull();
            assertThat(m.misrouted).as("heartbeats of another shard read by %s", m.name).isEmpty();
        }
    }

    private static KafkaShardedLeaderTransport.Builder builder(String topic) {
        return KafkaShardedLeaderTransport.builder()
                .bootstrapServers(TestServers.kafka().bootstrapServers())
                .topic(topic)
                .shards(SHARDS)
                .dispatcherConfig(CONFIG)
                .deliveryTimeout(Duration.ofSeconds(2))
                // the broker's group.min.session.timeout.ms
                .consumerProperty("session.timeout.ms", 6_000);
    }

    private Member join(String topic, String name) {
        Member m = new Member(name, builder(topic).consumerProperty("client.id", topic + "-" + name).build());
        members.add(m);
        m.thread.start();
        return m;
    }

    private synchronized void record(String event) {
        log.add(event);
    }

    /** Replays the log: no shard is ever gained by one member while another holds it. */
    private void assertExclusive() {
        replay(true);
    }

    /**
     * Replays the log into each shard's holder; with {@code strict}, asserts on the way that no shard is gained while
     * held and only its holder gives it up.
     */
    private synchronized Map<Integer, String> replay(boolean strict) {
        Map<Integer, String> holder = new HashMap<>();
        for (String e : log) {
            String who = e.substring(1, e.indexOf(' '));
            int shard = Integer.parseInt(e.substring(e.indexOf(' ') + 1));
            if (e.charAt(0) == '+') {
                if (strict) {
                    assertThat(holder.get(shard)).as("shard %d gained by %s while held, in %s", shard, who, log)
                            .isNull();
                }
                holder.put(shard, who);
            } else if (strict) {
                assertThat(holder.remove(shard)).as("shard %d given up by %s, in %s", shard, who, log).isEqualTo(who);
            } else {
                holder.remove(shard, who);
            }
        }
        return holder;
    }

    /** Whether the live members' shards are disjoint, cover all six, and each has at least one. */
    private static boolean spread(List<Member> live) {
        Set<Integer> all = new TreeSet<>();
        int total = 0;
        for (Member m : live) {
            Set<Integer> s = m.transport.assignedShards();
            if (s.isEmpty()) {
                return false;
            }
            total += s.size();
            all.addAll(s);
        }
        return total == SHARDS && all.size() == SHARDS;
    }

    /**
     * Waits until the shards are spread ({@link #spread}) and the log has caught up with it: a member's
     * {@code assignedShards()} changes before its listener hears {@code assigned}, so a test that snapshots the log
     * right after the spread could otherwise see the tail of that assignment as a later move.
     */
    private void awaitSpread(List<Member> live, String what) {
        Await.untilOrFail(() -> spread(live) && logAgrees(live), WAIT, () -> what + ": " + live + ", log " + logCopy());
    }

    /** Whether replaying the log gives each live member exactly the shards it says it is assigned. */
    private boolean logAgrees(List<Member> live) {
        Map<Integer, String> holder = replay(false);
        for (Member m : live) {
            Set<Integer> logged = new TreeSet<>();
            holder.forEach((shard, who) -> {
                if (who.equals(m.name)) {
                    logged.add(shard);
                }
            });
            if (!logged.equals(new TreeSet<>(m.transport.assignedShards()))) {
                return false;
            }
        }
        return true;
    }

    private synchronized List<String> logCopy() {
        return new ArrayList<>(log);
    }

    @Test
    void shardsAreSpreadOverTheMembersAndMoveWhenOneLeavesOrJoins() {
        String topic = "shard-neli-" + UUID.randomUUID();
        List<Member> live = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            live.add(join(topic, "m" + i));
        }
        long started = System.nanoTime();
        awaitSpread(live, "six shards over three members");
        long spreadMillis = (System.nanoTime() - started) / 1_000_000;
        // The cooperative sticky assignor evens them out: two each.
        assertThat(live).allSatisfy(m -> assertThat(m.transport.assignedShards()).hasSize(2));
        // Every shard's heartbeats come back to its owner, on its own partition.
        Await.untilOrFail(() -> live.stream().allMatch(m -> m.transport.assignedShards().stream()
                .allMatch(s -> m.ownHeartbeats(s) >= 3)), WAIT, () -> "each owner reads its shards' heartbeats");

        Member leaving = live.remove(1);
        Set<Integer> itsShards = leaving.transport.assignedShards();
        Map<String, Set<Integer>> before = new HashMap<>();
        live.forEach(m -> before.put(m.name, m.transport.assignedShards()));
        long closing = System.nanoTime();
        leaving.close();
        awaitSpread(live, "six shards over the two left");
        long leaveMillis = (System.nanoTime() - closing) / 1_000_000;
        // Sticky: the others kept what they had and took only the leaver's shards.
        for (Member m : live) {
            assertThat(m.transport.assignedShards()).containsAll(before.get(m.name));
        }

        Member joining = join(topic, "m3");
        live.add(joining);
        long joined = System.nanoTime();
        awaitSpread(live, "six shards over three members again");
        long joinMillis = (System.nanoTime() - joined) / 1_000_000;
        Await.untilOrFail(() -> joining.transport.assignedShards().stream().allMatch(s -> joining.ownHeartbeats(s) >= 3),
                WAIT, () -> "the new member reads its shards' heartbeats");
        System.out.printf("sharded leader group: 6 shards spread over 3 members in %d ms; %s's shards %s moved in"
                        + " %d ms after it closed; a joining member took %s in %d ms%n", spreadMillis, leaving.name,
                itsShards, leaveMillis, joining.transport.assignedShards(), joinMillis);
        assertExclusive();
    }

    /**
     * A member whose lease lapsed asks the group to confirm what it owns ({@code reconfirm()}, from another thread, as
     * a shard's leader thread does): the rejoin completes, the member hears {@code confirmed} with the shards it still
     * owns, and with the cooperative sticky assignor nothing moved, in either member.
     */
    @Test
    void reconfirmRejoinsAndConfirmsTheShardsStillOwnedWithoutMovingAny() {
        String topic = "shard-neli-confirm-" + UUID.randomUUID();
        List<Member> live = List.of(join(topic, "m0"), join(topic, "m1"));
        awaitSpread(live, "six shards over two members");
        Member asking = live.get(0);
        Set<Integer> mine = asking.transport.assignedShards();
        Set<Integer> theirs = live.get(1).transport.assignedShards();
        int logged;
        synchronized (this) {
            logged = log.size();
        }
        assertThat(asking.transport.reconfirm()).isTrue();
        Await.untilOrFail(() -> asking.confirmations.get() > 0, WAIT, () -> "the confirmation of " + asking);
        assertThat(asking.lastConfirmed).isEqualTo(mine);
        assertThat(live.get(1).confirmations.get()).as("the other member asked for nothing").isZero();
        assertThat(asking.transport.assignedShards()).isEqualTo(mine);
        assertThat(live.get(1).transport.assignedShards()).isEqualTo(theirs);
        synchronized (this) {
            assertThat(log.subList(logged, log.size())).as("no shard moved").isEmpty();
        }
    }

    @Test
    void refusesALeaderTopicWithAnotherPartitionCount() {
        String topic = "shard-neli-four-" + UUID.randomUUID();
        TestServers.kafka().createTopic(topic, 4);
        KafkaShardedLeaderTransport t = builder(topic).build();
        try {
            assertThatThrownBy(() -> t.start(new Recording(null)))
                    .isInstanceOf(OutboxException.class)
                    .hasMessageContaining("'" + topic + "' has 4 partition(s)")
                    .hasMessageContaining("6 shard(s)");
        } finally {
            t.close();
        }
    }

    @Test
    void settingsNameTheShardCountAndKeepTheLeaderTransportsRelations() {
        KafkaShardedLeaderTransport.Builder b = KafkaShardedLeaderTransport.builder().bootstrapServers("127.0.0.1:9")
                .topic("orders-leader");
        assertThatThrownBy(b::build).hasMessageContaining("shard count must be set");
        assertThatThrownBy(() -> b.shards(0)).hasMessageContaining(": 0");
        assertThatThrownBy(() -> b.shards(257)).hasMessageContaining("257");
        KafkaShardedLeaderTransport t = b.shards(6).build();
        assertThat(t.shards()).isEqualTo(6);
        assertThat(t.groupId()).isEqualTo("orders-leader");
        assertThat(t.sessionTimeout()).isEqualTo(Duration.ofSeconds(15)); // as KafkaLeaderTransport's defaults
        assertThatThrownBy(() -> b.consumerProperty("session.timeout.ms", "10000").build())
                .hasMessageContaining("'session.timeout.ms'").hasMessageContaining("was 10000");
        assertThatThrownBy(() -> t.publish(6, new Heartbeat(UUID.randomUUID(), 1)))
                .hasMessageContaining("shard index 6");
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
        }

        @Override
        public void revoked(Set<Integer> shards) {
            // a drain takes a moment: the next owner must not get the shards before this returns
            LockSupport.parkNanos(Duration.ofMillis(200).toNanos());
            shards.forEach(s -> record("-" + member.name + " " + s));
        }

        @Override
        public void lost(Set<Integer> shards) {
            shards.forEach(s -> record("-" + member.name + " " + s));
        }

        @Override
        public void confirmed(Set<Integer> shards) {
            member.lastConfirmed = Set.copyOf(shards);
            member.confirmations.incrementAndGet();
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

    /** One member: a thread polling its transport and publishing a heartbeat per owned shard on every poll. */
    private final class Member {
        final String name;
        final KafkaShardedLeaderTransport transport;
        final UUID id = UUID.randomUUID();
        final Thread thread;
        final Map<Integer, AtomicLong> heartbeats = new ConcurrentHashMap<>();
        final Set<String> misrouted = ConcurrentHashMap.newKeySet();
        final AtomicLong confirmations = new AtomicLong();
        volatile Set<Integer> lastConfirmed = Set.of();
        volatile boolean stop;
        volatile Throwable failure;

        Member(String name, KafkaShardedLeaderTransport transport) {
            this.name = name;
            this.transport = transport;
            this.thread = new Thread(this::run, "shard-member-" + name);
            this.thread.setDaemon(true);
        }

        private void run() {
            try {
                transport.start(new Recording(this));
                long round = 0;
                while (!stop) {
                    transport.poll(CONFIG.pollInterval());
                    round++;
                    for (int s : transport.assignedShards()) {
                        transport.publish(s, new Heartbeat(id, round * SHARDS + s));
                    }
                }
            } catch (Throwable e) {
                failure = e;
            } finally {
                // As a dispatcher does: it stops using its shards, then leaves the group.
                transport.assignedShards().forEach(s -> record("-" + name + " " + s));
                transport.close();
            }
        }

        long ownHeartbeats(int shard) {
            AtomicLong n = heartbeats.get(shard);
            return n == null ? 0 : n.get();
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
            return name + new HashSet<>(transport.assignedShards());
        }
    }
}
