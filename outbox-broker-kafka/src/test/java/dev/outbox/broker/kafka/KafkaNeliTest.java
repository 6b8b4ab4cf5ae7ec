package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * NELI over a real Kafka broker: contenders drive the core's state machine over {@link KafkaLeaderTransport}
 * and every leadership change goes into a timeline; the assertions are on that timeline, not just on who leads
 * at the end. Timings are small so that the suite stays quick: heartbeat timeout 1 s, poll interval 100 ms,
 * producer delivery timeout 2 s, group session timeout 6 s (the broker's minimum).
 */
class KafkaNeliTest {
    static final Duration POLL = Duration.ofMillis(100);
    static final Duration HEARTBEAT_TIMEOUT = Duration.ofSeconds(1);
    static final Duration DELIVERY_TIMEOUT = Duration.ofSeconds(2);
    static final int SESSION_TIMEOUT_MS = 6_000;
    static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(POLL)
            .heartbeatTimeout(HEARTBEAT_TIMEOUT).drainTimeout(Duration.ofSeconds(2)).build();

    private static String bootstrap;

    private final LeadershipTimeline timeline = new LeadershipTimeline();
    private final List<NeliContender> contenders = new ArrayList<>();
    private String topic;

    @BeforeAll
    static void kafka() {
        bootstrap = TestServers.kafka().bootstrapServers();
    }

    @AfterEach
    void stopAll(TestInfo info) {
        for (NeliContender c : contenders) {
            c.close();
        }
        System.out.println(info.getDisplayName() + " timeline:\n" + timeline);
        for (NeliContender c : contenders) {
            assertThat(c.failure()).as("contender %s failed", c.name).isNull();
        }
    }

    private NeliContender contender(String name) {
        KafkaLeaderTransport transport = KafkaLeaderTransport.builder()
                .bootstrapServers(bootstrap)
                .topic(topic)
                .dispatcherConfig(CONFIG)
                .deliveryTimeout(DELIVERY_TIMEOUT)
                .consumerProperty("client.id", topic + "-" + name)
                // The relation needs only 3.3 s (1 s + 2 s + 333 ms), but brokers refuse sessions shorter than
                // group.min.session.timeout.ms, 6 s by default.
                .consumerProperty("session.timeout.ms", SESSION_TIMEOUT_MS)
                .build();
        NeliContender c = new NeliContender(name, transport, timeline, HEARTBEAT_TIMEOUT, POLL);
        contenders.add(c);
        return c.start();
    }

    private List<NeliContender> contenders(int n) {
        topic = "neli-" + UUID.randomUUID();
        List<NeliContender> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(contender("c" + i));
        }
        return list;
    }

    private NeliContender awaitSingleLeader(List<NeliContender> among, Duration timeout) {
        Await.untilOrFail(() -> among.stream().filter(NeliContender::isLeader).count() == 1, timeout,
                () -> "a single leader among " + among + "\n" + timeline);
        return among.stream().filter(NeliContender::isLeader).findFirst().orElseThrow();
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    @Test
    void oneLeaderAmongThreeAndOrderlyHandOverWhenTheLeaderCloses() {
        List<NeliContender> all = contenders(3);
        NeliContender first = awaitSingleLeader(all, Duration.ofSeconds(30));
        long seen = first.ownHeartbeatsSeen();
        // Heartbeats keep flowing for several heartbeat timeouts without a fence.
        Await.untilOrFail(() -> first.ownHeartbeatsSeen() >= seen + 30, Duration.ofSeconds(10),
                () -> "leader sees its heartbeats");
        assertThat(timeline.first(0, e -> e.kind() == LeadershipTimeline.Kind.FENCED)).as("fence in\n%s", timeline).isNull();
        assertThat(all.stream().filter(NeliContender::isLeader)).containsExactly(first);

        List<NeliContender> rest = new ArrayList<>(all);
        List<Long> takeovers = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            NeliContender leader = rest.stream().filter(NeliContender::isLeader).findFirst().orElseThrow();
            rest.remove(leader);
            long closing = System.nanoTime();
            leader.close();
            NeliContender next = awaitSingleLeader(rest, Duration.ofSeconds(15));
            LeadershipTimeline.Event acquired = timeline.first(closing,
                    e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(next.name));
            takeovers.add(millis(acquired.nanos() - closing));
        }
        System.out.println("orderly take-over after the leader closed: " + takeovers + " ms (group heartbeat"
                + " interval " + contenders.get(0).transport.heartbeatInterval().toMillis() + " ms)");
        // Documented bound: a leaving member triggers a rebalance at once; the others join it at their next
        // group heartbeat, so take-over takes about heartbeat.interval.ms plus two round trips.
        for (long t : takeovers) {
            assertThat(t).isLessThan(contenders.get(0).transport.sessionTimeout().toMillis());
        }
        timeline.assertExclusive();
    }

    @Test
    void crashedLeaderIsReplacedOnceItsSessionExpires() {
        List<NeliContender> all = contenders(2);
        NeliContender leader = awaitSingleLeader(all, Duration.ofSeconds(30));
        NeliContender other = all.get(0) == leader ? all.get(1) : all.get(0);
        long crashed = System.nanoTime();
        leader.crash();
        awaitSingleLeader(List.of(other), Duration.ofSeconds(30));
        LeadershipTimeline.Event acquired = timeline.first(crashed,
                e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(other.name));
        long takeover = millis(acquired.nanos() - crashed);
        long session = leader.transport.sessionTimeout().toMillis();
        System.out.println("take-over after a crash: " + takeover + " ms (session timeout " + session + " ms)");
        // Nobody may take over before the crashed leader's session can have expired...
        assertThat(takeover).isGreaterThanOrEqualTo(session - leader.transport.heartbeatInterval().toMillis());
        // ...and the group notices within a session timeout plus a rebalance.
        assertThat(takeover).isLessThan(session + 5_000);
        timeline.assertExclusive();
    }

    @Test
    void stalledLeaderFencesItselfBeforeAnotherInstanceAcquires() {
        List<NeliContender> all = contenders(3);
        NeliContender leader = awaitSingleLeader(all, Duration.ofSeconds(30));
        UUID firstId = leader.leaderId();
        List<NeliContender> others = new ArrayList<>(all);
        others.remove(leader);

        long stalled = System.nanoTime();
        leader.stall(true); // its consumer is no longer polled: no heartbeats seen, no rebalance callbacks
        NeliContender next = awaitSingleLeader(others, Duration.ofSeconds(30));

        LeadershipTimeline.Event fenced = timeline.first(stalled,
                e -> e.who().equals(leader.name) && e.kind() == LeadershipTimeline.Kind.FENCED);
        LeadershipTimeline.Event acquired = timeline.first(stalled,
                e -> e.who().equals(next.name) && e.kind() == LeadershipTimeline.Kind.ACQUIRED);
        assertThat(fenced).as("stalled leader fenced itself\n%s", timeline).isNotNull();
        long fencedAfter = millis(fenced.nanos() - stalled);
        long acquiredAfter = millis(acquired.nanos() - stalled);
        System.out.println("stalled leader fenced after " + fencedAfter + " ms; next leader acquired after "
                + acquiredAfter + " ms (max.poll.interval.ms " + leader.transport.maxPollInterval().toMillis() + ")");
        // It fenced within the heartbeat timeout (plus a poll or two of granularity)...
        assertThat(fencedAfter).isLessThanOrEqualTo(HEARTBEAT_TIMEOUT.toMillis() + 3 * POLL.toMillis());
        // ...and the next leader started only after the fenced leader's last sends had settled.
        assertThat(acquired.nanos() - fenced.nanos())
                .as("gap between the fence and the next acquisition\n%s", timeline)
                .isGreaterThan(DELIVERY_TIMEOUT.toNanos());

        // When it polls again it learns that it lost the partition and stays a standby.
        leader.stall(false);
        Await.untilOrFail(() -> !leader.transport.isAssigned(), Duration.ofSeconds(15),
                () -> "the ex-leader notices it lost the partition");
        long rejoined = System.nanoTime();
        long seenByNext = next.ownHeartbeatsSeen();
        Await.untilOrFail(() -> next.ownHeartbeatsSeen() >= seenByNext + 15, Duration.ofSeconds(10),
                () -> "the new leader keeps seeing its heartbeats");
        assertThat(next.isLeader()).isTrue();
        assertThat(timeline.first(rejoined, e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED)).isNull();
        assertThat(leader.isLeader()).isFalse();
        assertThat(timeline.events()).filteredOn(e -> firstId.equals(e.leaderId())).hasSize(1);
        timeline.assertExclusive();
    }

    @Test
    void contendersStartedWhileKafkaIsDownElectALeaderOnceItIsBack() {
        topic = "neli-" + UUID.randomUUID();
        List<NeliContender> all = new ArrayList<>();
        TestServers.kafka().stop();
        try {
            // start() must not fail: the leader topic cannot even be checked yet
            all.add(contender("c0"));
            all.add(contender("c1"));
            Await.untilOrFail(() -> all.stream().allMatch(c -> c.polls() > 3), Duration.ofSeconds(15),
                    () -> "both contenders joined (their loops are polling)");
            assertThat(all).allMatch(c -> c.failure() == null && c.isRunning());
        } finally {
            TestServers.kafka().restart();
        }
        awaitSingleLeader(all, Duration.ofSeconds(40));
        timeline.assertExclusive();
    }

    @Test
    void leaderThatStopsSeeingItsHeartbeatsFencesAndResumesWithANewLeaderId() {
        List<NeliContender> all = contenders(2);
        NeliContender leader = awaitSingleLeader(all, Duration.ofSeconds(30));
        UUID firstId = leader.leaderId();
        long deafened = System.nanoTime();
        leader.deafen(true);
        long fencedAt = Await.untilOrFail(() -> !leader.isLeader(), Duration.ofSeconds(5),
                () -> "the deaf leader fences itself");
        assertThat(millis(fencedAt - deafened)).isLessThanOrEqualTo(HEARTBEAT_TIMEOUT.toMillis() + 3 * POLL.toMillis());
        // It still owns the partition, so nobody else may lead; once it hears itself again it leads anew.
        assertThat(leader.transport.isAssigned()).isTrue();
        leader.deafen(false);
        Await.untilOrFail(leader::isLeader, Duration.ofSeconds(5), () -> "the leader resumes");
        assertThat(leader.leaderId()).isNotEqualTo(firstId);
        assertThat(all.stream().filter(NeliContender::isLeader)).containsExactly(leader);
        timeline.assertExclusive();
    }
}
