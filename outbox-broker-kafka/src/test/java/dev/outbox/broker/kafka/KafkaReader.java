package dev.outbox.broker.kafka;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Reads a topic from the beginning with a plain consumer (no group), for assertions. */
final class KafkaReader {
    private KafkaReader() {
    }

    private static KafkaConsumer<String, byte[]> consumer(String bootstrap) {
        return new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"),
                new StringDeserializer(), new ByteArrayDeserializer());
    }

    private static List<TopicPartition> partitions(KafkaConsumer<?, ?> c, String topic, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<PartitionInfo> infos = c.partitionsFor(topic, timeout);
            if (infos != null && !infos.isEmpty()) {
                List<TopicPartition> tps = new ArrayList<>();
                for (PartitionInfo p : infos) {
                    tps.add(new TopicPartition(topic, p.partition()));
                }
                return tps;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("topic '" + topic + "' has no partitions after " + timeout);
            }
        }
    }

    /** Every record of {@code topic} up to its current end, in partition then offset order. */
    static List<ConsumerRecord<String, byte[]>> readToEnd(String bootstrap, String topic, Duration timeout) {
        try (KafkaConsumer<String, byte[]> c = consumer(bootstrap)) {
            List<TopicPartition> tps = partitions(c, topic, timeout);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, timeout);
            List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!reached(c, end)) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("could not read '" + topic + "' to its end " + end + " within " + timeout);
                }
                c.poll(Duration.ofMillis(100)).forEach(out::add);
            }
            return out;
        }
    }

    /**
     * {@link #readToEnd} again and again until it returns at least {@code expected} records, or fails after
     * {@code timeout}. For a transactional producer's topic read right after a commit: the commit returns once the
     * coordinator decided it, and the partitions' commit markers (and so the end a {@code read_committed} reader
     * reads to) follow a moment later, so one read to the end may stop before the committed records. Duplicates
     * would still be seen: the read that first has {@code expected} records reads everything committed before.
     */
    static List<ConsumerRecord<String, byte[]>> readCommitted(String bootstrap, String topic, int expected,
                                                              Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<ConsumerRecord<String, byte[]>> got = readToEnd(bootstrap, topic, timeout);
            if (got.size() >= expected) {
                return got;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("read " + got.size() + " committed record(s) of '" + topic + "', expected at"
                        + " least " + expected + ", within " + timeout + ": " + got);
            }
        }
    }

    /** Reads {@code topic} from the beginning until at least {@code expected} records arrived or timeout. */
    static List<ConsumerRecord<String, byte[]>> read(String bootstrap, String topic, int expected, Duration timeout) {
        try (KafkaConsumer<String, byte[]> c = consumer(bootstrap)) {
            List<TopicPartition> tps = partitions(c, topic, timeout);
            c.assign(tps);
            c.seekToBeginning(tps);
            List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (out.size() < expected && System.nanoTime() - deadline < 0) {
                c.poll(Duration.ofMillis(100)).forEach(out::add);
            }
            return out;
        }
    }

    private static boolean reached(KafkaConsumer<?, ?> c, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (c.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
