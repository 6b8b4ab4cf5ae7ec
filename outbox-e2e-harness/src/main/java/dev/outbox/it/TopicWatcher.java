package dev.outbox.it;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The downstream consumer of a scenario on Kafka: a thread reading every partition of the data topic from the
 * beginning while the dispatchers publish, checking each record as it arrives (see {@link DataWatcher}).
 */
final class TopicWatcher extends DataWatcher {
    private final KafkaConsumer<String, byte[]> consumer;
    private final String topic;
    private final Thread thread;
    private volatile boolean running = true;

    TopicWatcher(String bootstrap, String topic) {
        this(bootstrap, topic, false);
    }

    /** @param readCommitted read with {@code isolation.level=read_committed} (records of aborted transactions unseen) */
    TopicWatcher(String bootstrap, String topic, boolean readCommitted) {
        this.topic = topic;
        this.consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted",
                ConsumerConfig.CLIENT_ID_CONFIG, "e2e-watcher-" + topic),
                new StringDeserializer(), new ByteArrayDeserializer());
        this.thread = new Thread(this::run, "e2e-watcher");
    }

    @Override
    void start() {
        List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo p : infos) {
            partitions.add(new TopicPartition(topic, p.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        thread.start();
    }

    private void run() {
        try {
            while (running) {
                ConsumerRecords<String, byte[]> batch = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                for (ConsumerRecord<String, byte[]> r : batch) {
                    take(r.key(), r.value(), "partition " + r.partition() + ", offset " + r.offset(), now);
                }
            }
        } catch (WakeupException e) {
            // closing
        } catch (Throwable e) {
            failure = e;
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        consumer.wakeup();
        thread.join(TimeUnit.SECONDS.toMillis(30));
        consumer.close(Duration.ofSeconds(5));
    }

    @Override
    public String toString() {
        return "watcher of " + topic;
    }
}
