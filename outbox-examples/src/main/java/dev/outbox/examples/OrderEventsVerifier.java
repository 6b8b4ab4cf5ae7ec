package dev.outbox.examples;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The consumer side of the demo: reads the orders topic from the moment it started and checks, per customer,
 * that order numbers arrive in order. Per key, each record must be the next order number, or a repeat of the
 * latest one (a duplicate after a failure or a change of leader, which at-least-once delivery allows); anything
 * else — an older record after a newer one, or a skipped number — is an order violation.
 *
 * <p>Its state is written only by its own thread; counters may be read from any thread, the per-key results
 * once {@link #close()} returned.
 */
final class OrderEventsVerifier implements AutoCloseable {
    private final KafkaConsumer<String, byte[]> consumer;
    private final String runId;
    private final LatencyClock clock;
    private final Thread thread;
    private final Map<String, long[]> perKey = new HashMap<>(); // key -> {first, last, distinct}
    private final List<String> violations = new ArrayList<>();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong distinct = new AtomicLong();
    private final AtomicLong violationCount = new AtomicLong();
    private final AtomicLong otherRuns = new AtomicLong();
    private volatile boolean running = true;
    private volatile Throwable failure;

    private OrderEventsVerifier(KafkaConsumer<String, byte[]> consumer, String runId, LatencyClock clock) {
        this.consumer = consumer;
        this.runId = runId;
        this.clock = clock;
        this.thread = new Thread(this::run, "demo-consumer");
        this.thread.setDaemon(true);
    }

    /** Assigns every partition of {@code topic}, positioned at its current end, and starts reading. */
    static OrderEventsVerifier start(String bootstrapServers, String topic, String runId, LatencyClock clock) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "outbox-demo-consumer");
        KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(p);
        try {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(tp -> consumer.position(tp, Duration.ofSeconds(30))); // resolve "end" now
        } catch (RuntimeException e) {
            consumer.close();
            throw e;
        }
        OrderEventsVerifier verifier = new OrderEventsVerifier(consumer, runId, clock);
        verifier.thread.start();
        return verifier;
    }

    private void run() {
        try {
            while (running) {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    check(r);
                }
            }
        } catch (WakeupException e) {
            // close() woke us up
        } catch (Throwable e) {
            failure = e;
        }
    }

    private void check(ConsumerRecord<String, byte[]> r) {
        if (!runId.equals(header(r, OrderService.RUN_HEADER))) {
            otherRuns.incrementAndGet();
            return;
        }
        received.incrementAndGet();
        long seq = Long.parseLong(header(r, OrderService.SEQ_HEADER));
        long[] state = perKey.get(r.key());
        if (state == null) {
            perKey.put(r.key(), new long[]{seq, seq, 1});
            firstDelivery(r);
        } else if (seq == state[1] + 1) {
            state[1] = seq;
            state[2]++;
            firstDelivery(r);
        } else if (seq != state[1]) { // seq == last is a duplicate of the latest record: allowed
            violationCount.incrementAndGet();
            if (violations.size() < 10) {
                violations.add(r.key() + ": order " + seq + " arrived after order " + state[1]
                        + " (partition " + r.partition() + ", offset " + r.offset() + ")");
            }
            if (seq > state[1]) { // count it once, so that "missing" stays meaningful
                state[1] = seq;
                state[2]++;
                firstDelivery(r);
            }
        }
    }

    private void firstDelivery(ConsumerRecord<String, byte[]> r) {
        distinct.incrementAndGet();
        clock.consumed(Long.parseLong(header(r, OrderService.ORDER_HEADER)));
    }

    private static String header(ConsumerRecord<?, ?> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Records of this run read so far, duplicates included. */
    long received() {
        return received.get();
    }

    /** Distinct records of this run read so far. */
    long distinct() {
        return distinct.get();
    }

    long violationCount() {
        return violationCount.get();
    }

    /** Records of other runs seen on the topic (only on a shared, existing Kafka). */
    long otherRuns() {
        return otherRuns.get();
    }

    /** Per key {first, last, distinct} order numbers read; call after {@link #close()}. */
    Map<String, long[]> perKey() {
        return perKey;
    }

    /** The first few violations, described; call after {@link #close()}. */
    List<String> violations() {
        return violations;
    }

    /** Why the consumer thread stopped early, or null. */
    Throwable failure() {
        return failure;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        consumer.wakeup();
        thread.join(10_000);
        consumer.close(Duration.ofSeconds(5));
    }
}
