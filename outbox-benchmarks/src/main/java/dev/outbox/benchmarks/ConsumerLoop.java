package dev.outbox.benchmarks;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Where the latency scenario's records arrive: read from the topic's end by a Kafka consumer, or handed over by an
 * in-process handler ({@link #arrived}); notes when each sequence number first arrives.
 */
final class ConsumerLoop implements Runnable {
    /** The Kafka cluster read; null when the records arrive by {@link #arrived} only. */
    private final String bootstrapServers;
    private final String topic;
    private final long base;
    private final AtomicLongArray consumed;
    private final int capacity;
    private final AtomicLong count = new AtomicLong();
    private final java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
    private volatile boolean stop;
    private Thread thread;

    ConsumerLoop(String bootstrapServers, String topic, long base, AtomicLongArray consumed, int capacity) {
        this.bootstrapServers = bootstrapServers;
        this.topic = topic;
        this.base = base;
        this.consumed = consumed;
        this.capacity = capacity;
    }

    void start() throws InterruptedException {
        if (bootstrapServers == null) {
            return;
        }
        thread = new Thread(this, "bench-consumer");
        thread.setDaemon(true);
        thread.start();
        ready.await();
    }

    long count() {
        return count.get();
    }

    void stop() throws InterruptedException {
        stop = true;
        if (thread != null) {
            thread.join(10_000);
        }
    }

    /**
     * A record arrived now.
     *
     * @param value its value, which starts with its sequence number
     */
    void arrived(byte[] value) {
        long now = System.nanoTime() - base + 1;
        long seq = LatencyScenario.sequence(value);
        if (seq >= 0 && seq < capacity && consumed.compareAndSet((int) seq, 0, now)) {
            count.incrementAndGet();
        }
    }

    @Override
    public void run() {
        Map<String, Object> props = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ConsumerConfig.CLIENT_ID_CONFIG, "bench-latency-consumer",
                ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            for (TopicPartition p : partitions) {
                consumer.position(p);
            }
            ready.countDown();
            while (!stop) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    arrived(r.value());
                }
            }
        } finally {
            ready.countDown();
        }
    }
}
