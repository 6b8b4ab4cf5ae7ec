package dev.outbox.it;

import dev.outbox.ParkedRecord;
import dev.outbox.testservers.KafkaServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A phase of {@link KafkaBrokerLossEndToEndTest}'s scenario: the data topic is unavailable for a long time while the
 * writers keep writing, with {@code maxAttempts} 3 — it parks nothing and loses nothing, and per-key order holds when
 * it returns (issue #20, "outage is not poison"). It shares that test's cluster, set-up and final check, which keeps
 * it cheap in the build.
 *
 * <p>How the topic is made unavailable, for real: on the three-broker cluster the data topic's partitions are first
 * moved to one broker (a partition reassignment to a single replica, the topic's {@code min.insync.replicas} set to
 * 1), then that broker is killed (SIGKILL): the topic has no replica left and no leader, so every write to it fails
 * (the producers wait for a leader until their delivery timeout, 2 s), while the leader group's topic, moved to the
 * two other brokers beforehand (a killed broker holds up {@code acks=all} writes to every partition that still counts
 * it in sync, until its session expires: the heartbeats would stall past the heartbeat timeout), and the database stay
 * up, so that the leader keeps leading. The broker chosen is not the leader group's coordinator.
 * (Deleting the topic would be another fault: a topic that does not exist is a permanent failure by design, and its
 * records are parked; see the README's Kafka failures. Raising the topic's {@code min.insync.replicas} above its
 * replicas on the single broker was tried first: Kafka 4.3 went on acknowledging the writes.) The dispatcher is told
 * of an outage: it holds the failing keys behind one backoff, counts no attempt and parks nothing, and its
 * {@code health().outageSince()} says since when. Three failed deliveries take about 6 s, so under a poison record's
 * treatment every record in flight would have been parked within the outage. Then the broker is started again, the
 * topic returns and its replicas are spread over the three brokers again. The scenario's {@link Scenario#finish()}
 * then asserts G1–G4 and G6 (nothing lost, per-key order, duplicates explained and counted, nothing parked but the two
 * poison records).
 *
 * <p>The build runs an 8 s outage. The five-minute run of the "Done when":
 * <pre>
 * ./mvnw -B -pl outbox-integration-tests -am verify -Dtest=KafkaBrokerLossEndToEndTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Doutbox.e2e.topicOutage=PT5M -Doutbox.e2e.writerPauseMicros=20000
 * </pre>
 * ({@code writerPauseMicros} slows the writers, whose backlog is not limited during the outage, to about 350 messages
 * a second: measured once, 106,006 messages waited at the end of the five minutes, none parked, drained in 44 s.)
 */
final class TopicOutage {
    /** The outage in the build: longer than three failed deliveries (3 × the 2 s delivery timeout). */
    static final Duration SHORT_OUTAGE = Duration.ofSeconds(8);
    /**
     * Acknowledgements of new sends flow again within this bound once the killed broker is back (its start, which
     * {@link KafkaServer#startBroker} waits for, not counted): the partitions' leader election, the producers'
     * metadata refresh, the dispatcher's outage backoff (at most {@code maxIoErrorBackoff}).
     */
    static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);

    private TopicOutage() {
    }

    /** The outage's length: {@code -Doutbox.e2e.topicOutage} (an ISO-8601 duration), else {@link #SHORT_OUTAGE}. */
    static Duration length() {
        String configured = System.getProperty("outbox.e2e.topicOutage");
        return configured == null || configured.isBlank() ? SHORT_OUTAGE : Duration.parse(configured);
    }

    /**
     * Runs the phase on {@code s} (on {@code cluster}, every broker up, the dispatchers' {@code maxAttempts} 3) and
     * asserts what it can before {@link Scenario#finish()}: nothing parked meanwhile, the outage reported by the
     * leader's health while it lasted and no longer after it, the writers writing on, publishing resumed in time.
     */
    static void run(Scenario s, KafkaServer cluster, long seed) throws Exception {
        Duration outage = length();
        long phase = System.nanoTime();
        int parkedBefore = parked(s);
        int victim = (coordinator(s) + 1) % 3;
        List<Integer> others = List.of((victim + 1) % 3, (victim + 2) % 3);
        List<Integer> all = List.of(victim, (victim + 1) % 3, (victim + 2) % 3);
        // The leader group's topic leaves the broker first: a killed broker stays in the in-sync replicas of its
        // partitions until its session expires (2 s), which would hold the heartbeats past the heartbeat timeout
        // (1 s) and fence the leader. Only the data topic is to fail.
        placeOn(s, s.topic() + "-leader", others, null);
        placeOn(s, s.topic(), List.of(victim), "1");

        s.limitBacklog(false); // the writers keep writing while nothing is published
        long down = System.nanoTime();
        s.fault("data topic unavailable (its only broker killed)", () -> cluster.stopBroker(victim));
        s.awaitFailedSendAfter(down, "making the topic unavailable");
        String paused = s.awaitPaused("the topic made unavailable");
        assertThat(paused).as("the leader kept leading and reported the outage (seed %d)", seed)
                .contains("reports an outage");
        long pausedMillis = Scenario.millisSince(down);
        Scenario.await(() -> {
            assertThat(parked(s)).as("records parked during the outage (seed %d)", seed).isEqualTo(parkedBefore);
            return Scenario.millisSince(down) >= outage.toMillis();
        }, outage.plus(Scenario.WAIT), () -> "the outage's end");
        Node leader = s.awaitLeader();
        assertThat(leader.dispatcher.health().outageSince()).as("health reports the outage at its end (seed %d)",
                seed).isPresent();
        int waiting = s.waiting();

        long restarting = System.nanoTime();
        cluster.startBroker(victim);
        long restartMillis = Scenario.millisSince(restarting);
        long back = s.armAll();
        long resumedMillis = s.awaitFirstAckOfSendAfter(back, "the topic's broker started again");
        Scenario.await(() -> s.live().stream().noneMatch(n -> n.dispatcher.health().outageSince().isPresent()),
                Scenario.WAIT, () -> "health no longer reports the outage");
        placeOn(s, s.topic(), all, null);
        placeOn(s, s.topic() + "-leader", all, null);
        s.limitBacklog(true);
        s.awaitTraffic(300);
        assertThat(parked(s)).as("records parked by the outage (seed %d)", seed).isEqualTo(parkedBefore);
        assertThat(waiting).as("messages the writers committed during the outage, waiting (seed %d)", seed)
                .isGreaterThan(0);
        s.note(String.format("data topic unavailable for %d s (maxAttempts 3): %s, %d ms after the kill; %d messages"
                        + " waiting at its end, 0 parked; the broker started again in %d ms, a record sent after that"
                        + " acknowledged %d ms later; the phase took %d s", outage.toSeconds(), paused, pausedMillis,
                waiting, restartMillis, resumedMillis, Scenario.millisSince(phase) / 1000));
        assertThat(Duration.ofMillis(resumedMillis)).as("publishing resumed once the topic was back (seed %d)", seed)
                .isLessThanOrEqualTo(RECOVERY_BOUND);
    }

    /** Distinct records the nodes reported parked. */
    private static int parked(Scenario s) {
        return (int) s.live().stream().flatMap(n -> n.parked.stream()).map(ParkedRecord::id).distinct().count();
    }

    /** The broker (0 to 2) coordinating the leader group, whose topic is the data topic's name + "-leader". */
    private static int coordinator(Scenario s) throws Exception {
        String group = s.topic() + "-leader";
        try (Admin admin = admin(s)) {
            int id = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30,
                    TimeUnit.SECONDS).coordinator().id();
            assertThat(id).as("broker ids of the embedded cluster").isBetween(0, 2);
            return id;
        }
    }

    /**
     * Moves every partition of {@code name} to {@code brokers} (a reassignment) and sets, or with null removes, the
     * topic's {@code min.insync.replicas}; waits until the reassignment is done.
     */
    private static void placeOn(Scenario s, String name, List<Integer> brokers, String minInsync) throws Exception {
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, name);
        try (Admin admin = admin(s)) {
            admin.incrementalAlterConfigs(Map.of(topic, List.of(new AlterConfigOp(
                    new ConfigEntry("min.insync.replicas", minInsync == null ? "" : minInsync),
                    minInsync == null ? AlterConfigOp.OpType.DELETE : AlterConfigOp.OpType.SET)))).all()
                    .get(30, TimeUnit.SECONDS);
            int partitions = admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS).get(name)
                    .partitions().size();
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                moves.put(new TopicPartition(name, p), Optional.of(new NewPartitionReassignment(brokers)));
            }
            admin.alterPartitionReassignments(moves).all().get(30, TimeUnit.SECONDS);
            Scenario.await(() -> {
                try {
                    if (!admin.listPartitionReassignments().reassignments().get(30, TimeUnit.SECONDS).isEmpty()) {
                        return false;
                    }
                    TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames()
                            .get(30, TimeUnit.SECONDS).get(name);
                    return d.partitions().stream().allMatch(p -> p.replicas().size() == brokers.size()
                            && p.isr().size() == brokers.size());
                } catch (Exception e) {
                    return false;
                }
            }, Scenario.WAIT, () -> "the partitions of " + name + " on brokers " + brokers);
        }
    }

    private static Admin admin(Scenario s) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, s.kafka().bootstrapServers()));
    }
}
