package dev.outbox.examples;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DeliverCallback;
import dev.outbox.broker.rabbitmq.RabbitMqHeaders;
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
import java.util.function.Function;

/**
 * The consumer side of the demo: reads the orders topic from the moment it started and checks, per customer,
 * that order numbers arrive in order. Per key, each record must be the next order number, or a repeat of the
 * latest one (a duplicate after a failure or a change of leader, which at-least-once delivery allows); anything
 * else — an older record after a newer one, or a skipped number — is an order violation.
 *
 * <p>On Kafka it reads every partition from its own thread; on RabbitMQ ({@link #startRabbitMq}) it consumes every
 * queue of the per-key topology, the client's threads handing it the deliveries. Its state is written under its lock;
 * counters may be read from any thread, the per-key results once {@link #close()} returned.
 */
final class OrderEventsVerifier implements AutoCloseable {
    /** Kafka's consumer, or null on RabbitMQ. */
    private final KafkaConsumer<String, byte[]> consumer;
    /** RabbitMQ's connection, or null on Kafka. */
    private volatile Connection rabbitMq;
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

    /**
     * Consumes every queue in {@code queues} (the per-key topology of the orders exchange) on the RabbitMQ node at
     * {@code uri}, acknowledging automatically: each customer's events come from one queue, in order. Messages of
     * earlier runs still queued count as {@link #otherRuns()}.
     */
    static OrderEventsVerifier startRabbitMq(String uri, List<String> queues, String runId, LatencyClock clock)
            throws Exception {
        OrderEventsVerifier verifier = new OrderEventsVerifier(null, runId, clock);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        Connection connection = factory.newConnection("outbox-demo-consumer");
        verifier.rabbitMq = connection;
        for (String queue : queues) {
            DeliverCallback deliver = (tag, delivery) -> {
                List<dev.outbox.Header> headers = RabbitMqHeaders.headers(delivery.getProperties());
                verifier.check(delivery.getEnvelope().getRoutingKey(), name -> headers.stream()
                        .filter(h -> h.name().equals(name)).reduce((a, b) -> b)
                        .map(dev.outbox.Header::valueAsString).orElse(null), "queue " + queue);
            };
            connection.createChannel().basicConsume(queue, true, deliver, tag -> { });
        }
        return verifier;
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
                    check(r.key(), name -> header(r, name), "partition " + r.partition() + ", offset " + r.offset());
                }
            }
        } catch (WakeupException e) {
            // close() woke us up
        } catch (Throwable e) {
            failure = e;
        }
    }

    /** Checks one record of key {@code key}, its headers read by {@code header}, read at {@code where}. */
    private synchronized void check(String key, Function<String, String> header, String where) {
        if (!runId.equals(header.apply(OrderService.RUN_HEADER))) {
            otherRuns.incrementAndGet();
            return;
        }
        received.incrementAndGet();
        long seq = Long.parseLong(header.apply(OrderService.SEQ_HEADER));
        long[] state = perKey.get(key);
        if (state == null) {
            perKey.put(key, new long[]{seq, seq, 1});
            firstDelivery(header);
        } else if (seq == state[1] + 1) {
            state[1] = seq;
            state[2]++;
            firstDelivery(header);
        } else if (seq != state[1]) { // seq == last is a duplicate of the latest record: allowed
            violationCount.incrementAndGet();
            if (violations.size() < 10) {
                violations.add(key + ": order " + seq + " arrived after order " + state[1] + " (" + where + ")");
            }
            if (seq > state[1]) { // count it once, so that "missing" stays meaningful
                state[1] = seq;
                state[2]++;
                firstDelivery(header);
            }
        }
    }

    private void firstDelivery(Function<String, String> header) {
        distinct.incrementAndGet();
        clock.consumed(Long.parseLong(header.apply(OrderService.ORDER_HEADER)));
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
    synchronized Map<String, long[]> perKey() {
        return perKey;
    }

    /** The first few violations, described; call after {@link #close()}. */
    synchronized List<String> violations() {
        return violations;
    }

    /** Why the consumer thread stopped early, or null. */
    Throwable failure() {
        return failure;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        if (consumer != null) {
            consumer.wakeup();
            thread.join(10_000);
            consumer.close(Duration.ofSeconds(5));
        }
        Connection connection = rabbitMq;
        if (connection != null) {
            try {
                connection.close(5_000);
            } catch (java.io.IOException | RuntimeException e) {
                failure = failure != null ? failure : e;
            }
        }
    }
}
