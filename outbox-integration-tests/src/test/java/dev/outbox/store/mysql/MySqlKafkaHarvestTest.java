package dev.outbox.store.mysql;

import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The MySQL store's harvest scenario ({@code MySqlHarvestTests} in {@code outbox-store-mysql}: concurrent writers,
 * two dispatchers, two changes of leader) into a real Kafka, read back with a plain consumer: every committed message
 * arrives, per key in the order written. It lives here, not in the store's module, so that the MySQL store does not
 * depend on the Kafka adapter and the two modules build side by side. MySQL 8 only: the Kafka side is the same for
 * MariaDB, whose harvest runs against the in-memory broker in the store's module.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class MySqlKafkaHarvestTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Test
    void intoKafkaConcurrentWritersAndTwoLeaderChangesDeliverEveryRecordInPerKeyOrder() throws Exception {
        KafkaServer kafka = TestServers.kafka();
        String topic = "orders-mysql-" + UUID.randomUUID();
        kafka.createTopic(topic, 4);
        MySqlHarvestTests scenario = new MySqlHarvestTests() {
            @Override
            JdbcServer.Kind kind() {
                return JdbcServer.Kind.MYSQL;
            }
        };
        scenario.harvest("kafka", topic, index -> KafkaMessageBroker.builder()
                        .bootstrapServers(kafka.bootstrapServers()).deliveryTimeout(Duration.ofSeconds(5)).build(),
                () -> readToEnd(kafka.bootstrapServers(), topic), () -> 0L);
    }

    /** Every record of {@code topic} up to its current end, partition by partition in offset order. */
    private static List<Map.Entry<String, String>> readToEnd(String bootstrap, String topic) {
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false),
                new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, WAIT)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, WAIT);
            Map<TopicPartition, List<Map.Entry<String, String>>> byPartition = new HashMap<>();
            Await.untilOrFail(() -> {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    byPartition.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), p -> new ArrayList<>())
                            .add(new AbstractMap.SimpleEntry<>(r.key(), new String(r.value(), StandardCharsets.UTF_8)));
                }
                for (TopicPartition p : partitions) {
                    if (consumer.position(p) < end.get(p)) {
                        return false;
                    }
                }
                return true;
            }, WAIT, () -> "could not read " + topic + " to its end " + end);
            List<Map.Entry<String, String>> all = new ArrayList<>();
            byPartition.values().forEach(all::addAll);
            return all;
        }
    }
}
