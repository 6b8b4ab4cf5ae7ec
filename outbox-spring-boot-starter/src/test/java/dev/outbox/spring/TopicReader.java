package dev.outbox.spring;

import dev.outbox.testkit.Await;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/** Reads a topic from its beginning, for the tests' checks of what the dispatcher published. Not thread-safe. */
final class TopicReader implements AutoCloseable {
    private final KafkaConsumer<String, String> consumer;
    private final List<ConsumerRecord<String, String>> records = new ArrayList<>();

    TopicReader(String bootstrap, String topic) {
        consumer = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                new StringDeserializer(), new StringDeserializer());
        List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
    }

    /** Polls until the records read so far satisfy {@code done}, or fails after {@code timeout}. */
    List<ConsumerRecord<String, String>> readUntil(Predicate<List<ConsumerRecord<String, String>>> done,
                                                   Duration timeout) {
        Await.untilOrFail(() -> {
            consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            return done.test(records);
        }, timeout, () -> records.size() + " records read: " + records.stream().map(ConsumerRecord::value).toList());
        return List.copyOf(records);
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }
}
