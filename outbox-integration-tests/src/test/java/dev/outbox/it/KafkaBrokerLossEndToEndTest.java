package dev.outbox.it;

import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One broker of three lost mid-stream: the scenario of {@link Scenario} on the three-broker cluster
 * ({@link TestServers#kafkaCluster()}: replication factor 3, {@code min.insync.replicas=2}; the producers send with
 * {@code acks=all}, which the Kafka broker adapter enforces). The broker leading the data topic's partition 0 is
 * stopped while records flow; with two in-sync replicas left every send can still be acknowledged, so publishing
 * goes on after the controller moved leadership, and the broker is started again while it does. {@link
 * Scenario#finish()} asserts G1–G4 and G6; the test asserts and prints how long publishing paused.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class KafkaBrokerLossEndToEndTest {
    /**
     * Publishing goes on after a broker is lost: the controller moves partition leadership at once on a shutdown,
     * the producers refresh their metadata and retry within the delivery timeout (2 s here); a leader-group member
     * whose coordinator was on the lost broker finds the new one. Measured: about a second.
     */
    static final Duration RESUME_BOUND = Scenario.SESSION_TIMEOUT.multipliedBy(2);

    @Test
    void oneBrokerOfThreeLostMidStreamWithAcksAll() throws Exception {
        Long fixed = Long.getLong("outbox.e2e.seed");
        long seed = fixed != null ? fixed : System.nanoTime();
        KafkaServer cluster = TestServers.kafkaCluster();
        try (Scenario s = Scenario.start("broker_loss", seed, cluster)) {
            s.warmUp();
            s.awaitLeader();
            int victim = leaderOfPartitionZero(cluster, s.topic());
            long stopping = System.nanoTime();
            s.fault("broker " + victim + " of 3 lost", () -> cluster.stopBroker(victim));
            long stopMillis = Scenario.millisSince(stopping);
            long armed = s.armAll();
            long resumedMillis = s.awaitFirstPublishAfter(armed, "losing broker " + victim);
            s.awaitTraffic(1_500);
            long restarting = System.nanoTime();
            cluster.startBroker(victim);
            long restartMillis = Scenario.millisSince(restarting);
            s.awaitTraffic(1_000);
            s.note(String.format("broker %d (leader of partition 0) stopped in %d ms, publishing went on %d ms after"
                    + " it was gone, broker started again in %d ms", victim, stopMillis, resumedMillis, restartMillis));
            s.finish();

            assertThat(Duration.ofMillis(resumedMillis)).as("publishing went on with one broker lost (seed %d)", seed)
                    .isLessThanOrEqualTo(RESUME_BOUND);
        }
    }

    /** The index (0 to 2) of the broker leading partition 0 of {@code topic}. */
    private static int leaderOfPartitionZero(KafkaServer cluster, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                cluster.bootstrapServers()))) {
            TopicDescription d = admin.describeTopics(Set.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic);
            int id = d.partitions().get(0).leader().id();
            assertThat(id).as("broker ids of the embedded cluster").isBetween(0, 2);
            return id;
        }
    }
}
