package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class KafkaServerTest {

    private static KafkaServer kafka() {
        return TestServers.kafka();
    }

    @Test
    void startsEmbeddedAtTheClientsVersion() {
        assertThat(kafka().mode()).isEqualTo(ServerMode.EMBEDDED);
        assertThat(kafka().version()).isEqualTo("4.3.1");
        assertThat(kafka().bootstrapServers()).matches("[a-z0-9.]+:[0-9]+");
        assertThat(TestServers.kafka()).isSameAs(kafka());
    }

    @Test
    void createTopicIsIdempotentAndChecksPartitions() throws Exception {
        kafka().createTopic("idempotent", 3);
        kafka().createTopic("idempotent", 3);
        assertThatThrownBy(() -> kafka().createTopic("idempotent", 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3 partitions");
        assertThatThrownBy(() -> kafka().createTopic("zero", 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("zero");
        try (Admin admin = admin()) {
            assertThat(admin.listTopics().names().get(10, TimeUnit.SECONDS)).contains("idempotent");
        }
    }

    @Test
    void topicsAreNotCreatedAutomatically() throws Exception {
        try (Admin admin = admin()) {
            try (KafkaProducer<String, String> producer = producer(Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, 1000))) {
                assertThatThrownBy(() -> producer.send(new ProducerRecord<>("never_created", "k", "v")).get())
                        .isInstanceOf(Exception.class);
            }
            assertThat(admin.listTopics().names().get(10, TimeUnit.SECONDS)).doesNotContain("never_created");
        }
    }

    @Test
    void producesAndConsumesAcrossARestart() throws Exception {
        kafka().createTopic("across_restart", 2);
        String before = kafka().bootstrapServers();
        try (KafkaProducer<String, String> producer = producer(Map.of())) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("across_restart", "key" + (i % 3), "before-" + i)).get();
            }
        }

        kafka().restart();
        assertThat(kafka().bootstrapServers()).isEqualTo(before);

        try (KafkaProducer<String, String> producer = producer(Map.of())) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>("across_restart", "key" + (i % 3), "after-" + i))
                        .get(30, TimeUnit.SECONDS);
            }
        }
        List<String> values = consumeAll("across_restart", 15);
        assertThat(values).hasSize(15);
        assertThat(values.stream().filter(v -> v.startsWith("before-"))).hasSize(10);
        assertThat(values.stream().filter(v -> v.startsWith("after-"))).hasSize(5);
    }

    @Test
    void stopMakesTheBrokerUnreachableUntilRestart() throws Exception {
        kafka().createTopic("stopped", 1);
        try (KafkaProducer<String, String> producer = producer(Map.of())) {
            producer.send(new ProducerRecord<>("stopped", "k", "kept")).get();
        }
        kafka().stop();
        try {
            kafka().stop(); // idempotent
            try (Admin admin = admin()) {
                assertThatThrownBy(() -> admin.listTopics(new ListTopicsOptions().timeoutMs(1000)).names().get())
                        .isInstanceOf(ExecutionException.class);
            }
        } finally {
            kafka().restart();
        }
        assertThat(consumeAll("stopped", 1)).containsExactly("kept");
    }

    @Test
    void anExistingClusterCannotBeStoppedOrRestarted() {
        KafkaServer external = DefaultKafkaServer.start(new ExternalKafkaBackend(kafka().bootstrapServers()));
        assertThat(external.mode()).isEqualTo(ServerMode.EXTERNAL);
        external.createTopic("via_external", 1);
        assertThatThrownBy(external::stop).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining(kafka().bootstrapServers());
        assertThatThrownBy(external::restart).isInstanceOf(UnsupportedOperationException.class);
    }

    private static Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers()));
    }

    private static KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.putAll(extra);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** Reads {@code topic} from the beginning until {@code expected} records came, within 30 s. */
    private static List<String> consumeAll(String topic, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + topic);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (values.size() < expected && System.nanoTime() - deadline < 0) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }
}
