package dev.outbox.benchmarks;

import dev.outbox.benchmarks.peers.PeerLoad;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The consumer-side checker of the peers' runs: reads a topic from its start (probe records, without a sequence
 * number, skipped) and notes, per sequence number, when it first arrived ({@code seq - base} in {@link #consumed}),
 * how often it arrived, and whether it arrived behind a higher sequence number of its key (out of per-key order:
 * counted for a record's first arrival only; a later arrival of a record seen before is a duplicate). Keys are
 * the writers' own ({@link PeerLoad}), so per key, sequence order is commit order.
 */
final class PeerChecker implements Runnable {
    private final String bootstrap;
    private final String topic;
    private final long base;
    final AtomicLongArray consumed;
    private final Map<Long, Integer> arrivals = new HashMap<>();
    private final Map<String, Long> lastPerKey = new HashMap<>();
    private final CountDownLatch ready = new CountDownLatch(1);
    private volatile long distinct;
    private volatile long duplicates;
    private volatile long outOfOrder;
    private volatile long lastArrival = System.nanoTime();
    private volatile boolean stop;
    private Thread thread;

    PeerChecker(String bootstrap, String topic, long base, int capacity) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.base = base;
        this.consumed = new AtomicLongArray(capacity);
    }

    PeerChecker start() throws InterruptedException {
        thread = new Thread(this, "peer-checker");
        thread.setDaemon(true);
        thread.start();
        ready.await();
        return this;
    }

    long distinct() {
        return distinct;
    }

    long duplicates() {
        return duplicates;
    }

    long outOfOrder() {
        return outOfOrder;
    }

    long lastArrival() {
        return lastArrival;
    }

    /** Waits until {@code n} records have arrived (each counted once), or {@code timeout} has passed. */
    void awaitDistinct(long n, Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        while (distinct < n && System.nanoTime() - end < 0) {
            LockSupport.parkNanos(2_000_000L);
        }
    }

    /** Stops the consumer; then the counts are final and {@link #arrived} may be read. */
    void stop() throws InterruptedException {
        stop = true;
        thread.join(10_000);
    }

    boolean arrived(long seq) {
        synchronized (arrivals) {
            return arrivals.containsKey(seq);
        }
    }

    @Override
    public void run() {
        Map<String, Object> props = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.CLIENT_ID_CONFIG, "peer-checker",
                ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            for (TopicPartition p : partitions) {
                consumer.position(p);
            }
            ready.countDown();
            while (!stop) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    long now = System.nanoTime();
                    long seq = PeerLoad.sequence(r.value());
                    if (seq < 0) {
                        continue;
                    }
                    lastArrival = now;
                    int i = (int) (seq - base);
                    if (seq - base >= 0 && seq - base < consumed.length()) {
                        consumed.compareAndSet(i, 0, now);
                    }
                    int n;
                    synchronized (arrivals) {
                        n = arrivals.merge(seq, 1, Integer::sum);
                    }
                    if (n > 1) {
                        duplicates++;
                        continue;
                    }
                    distinct++;
                    String key = r.key() == null ? "" : new String(r.key(), StandardCharsets.UTF_8);
                    Long last = lastPerKey.get(key);
                    if (last != null && seq < last) {
                        outOfOrder++;
                    } else {
                        lastPerKey.put(key, seq);
                    }
                }
            }
        } finally {
            ready.countDown();
        }
    }
}
