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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The downstream consumer of a scenario: a thread reading every partition of the data topic from the beginning
 * while the dispatchers publish, checking each record as it arrives. Per key it keeps the sequence numbers in
 * arrival order, flags at once a record older than the key's latest (a G2 violation: a retry may repeat the
 * latest record, never an older one), counts repeats (duplicates), and notes the longest pause between two
 * records. Thread-safe: the consumer thread updates, the test reads, under the watcher's lock.
 */
final class TopicWatcher implements AutoCloseable {

    /** One consumed copy of a record. */
    record Copy(int seq, String token, long arrivedNanos) {
    }

    private final KafkaConsumer<String, byte[]> consumer;
    private final String topic;
    private final Thread thread;
    private final Map<String, List<Copy>> byKey = new HashMap<>();
    private final Map<String, Integer> lastSeq = new HashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final List<String> foreign = new ArrayList<>();
    private long records;
    private long distinct;
    private long duplicates;
    private long lastArrival;
    private long longestGapNanos;
    private volatile boolean running = true;
    private volatile Throwable failure;

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
                if (!batch.isEmpty()) {
                    take(batch);
                }
            }
        } catch (WakeupException e) {
            // closing
        } catch (Throwable e) {
            failure = e;
        }
    }

    private synchronized void take(ConsumerRecords<String, byte[]> batch) {
        long now = System.nanoTime();
        for (ConsumerRecord<String, byte[]> r : batch) {
            records++;
            int seq = Values.seqOf(r.value());
            if (seq < 0) {
                foreign.add(r.key() + "@" + r.partition() + ":" + r.offset());
                continue;
            }
            String token = Values.tokenOf(r.value());
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(new Copy(seq, token, now));
            Integer last = lastSeq.get(r.key());
            if (last == null || seq > last) {
                lastSeq.put(r.key(), seq);
                distinct++;
            } else if (seq == last) {
                duplicates++;
            } else {
                violations.add("key " + r.key() + ": seq " + seq + " (" + token + ") arrived after seq " + last
                        + " (partition " + r.partition() + ", offset " + r.offset() + ")");
            }
        }
        if (lastArrival != 0 && now - lastArrival > longestGapNanos) {
            longestGapNanos = now - lastArrival;
        }
        lastArrival = now;
    }

    /** Records consumed so far that advanced their key (each committed message counts once). */
    synchronized long distinct() {
        return distinct;
    }

    synchronized long records() {
        return records;
    }

    synchronized long duplicates() {
        return duplicates;
    }

    /** Out-of-order arrivals (G2 violations), described. */
    synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    /** Records that no writer wrote (poison records must never show up here). */
    synchronized List<String> foreign() {
        return List.copyOf(foreign);
    }

    /** Every consumed copy per key, in arrival order. */
    synchronized Map<String, List<Copy>> copies() {
        Map<String, List<Copy>> out = new HashMap<>();
        byKey.forEach((k, v) -> out.put(k, List.copyOf(v)));
        return out;
    }

    synchronized long longestGapMillis() {
        return TimeUnit.NANOSECONDS.toMillis(longestGapNanos);
    }

    /** Whether every key has reached at least the given sequence number. */
    synchronized boolean reached(Map<String, Integer> lastCommittedSeq) {
        for (Map.Entry<String, Integer> e : lastCommittedSeq.entrySet()) {
            Integer seen = lastSeq.get(e.getKey());
            if (seen == null || seen < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    Throwable failure() {
        return failure;
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
