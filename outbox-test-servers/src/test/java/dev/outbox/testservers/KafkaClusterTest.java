package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The three-broker cluster (child JVMs): replication factor 3, {@code min.insync.replicas=2}, one broker at a time
 * killed and started again. Tagged slow (about 140 s): the build leaves it out, and {@code KafkaBrokerLossEndToEndTest}
 * runs the cluster there; {@code -DexcludedGroups=} runs it.
 */
@Tag("slow")
class KafkaClusterTest {

    private static KafkaServer cluster() {
        return TestServers.kafkaCluster();
    }

    @Test
    void threeBrokersReplicateEveryTopicThreeTimes() throws Exception {
        assertThat(cluster().brokers()).isEqualTo(3);
        assertThat(cluster().bootstrapServers().split(",")).hasSize(3);
        cluster().createTopic("replicated", 2);
        try (Admin admin = admin()) {
            TopicDescription topic = admin.describeTopics(Set.of("replicated")).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get("replicated");
            assertThat(topic.partitions()).allSatisfy(p -> assertThat(p.replicas()).hasSize(3));
        }
        assertThatThrownBy(() -> cluster().stopBroker(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("broker 3");
        assertThatThrownBy(() -> TestServers.kafka().stopBroker(0)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("one-broker");
    }

    @Test
    void acksAllGoesOnWithOneBrokerOfThreeLost() throws Exception {
        cluster().createTopic("one_lost", 3);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("one_lost", "k" + i, "before")).get(30, TimeUnit.SECONDS);
            }
            cluster().stopBroker(1);
            cluster().stopBroker(1); // idempotent
            try {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("one_lost", "k" + i, "during")).get(30, TimeUnit.SECONDS);
                }
                try (Admin admin = admin()) {
                    TopicDescription topic = admin.describeTopics(Set.of("one_lost")).allTopicNames()
                            .get(30, TimeUnit.SECONDS).get("one_lost");
                    assertThat(topic.partitions()).allSatisfy(p -> assertThat(p.leader().id()).isNotEqualTo(1));
                }
            } finally {
                cluster().startBroker(1);
            }
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("one_lost", "k" + i, "after")).get(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aBrokerKilledAndStartedAtOnceIsBackInSyncWhenStartBrokerReturns() throws Exception {
        cluster().createTopic("restarted", 2);
        cluster().stopBroker(2);
        // The controller still counts the killed broker as live and in sync until its session expires (2 s):
        // startBroker must not mistake that for the new process being back.
        cluster().startBroker(2);
        try (Admin admin = admin()) {
            TopicDescription topic = admin.describeTopics(Set.of("restarted")).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get("restarted");
            assertThat(topic.partitions()).allSatisfy(p -> assertThat(p.isr()).extracting(n -> n.id()).contains(2));
            assertThat(admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)).extracting(n -> n.id())
                    .containsExactlyInAnyOrder(0, 1, 2);
        }
    }

    private static Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster().bootstrapServers()));
    }

    private static KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster().bootstrapServers());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }
}
