package dev.outbox.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DeliverCallback;
import com.rabbitmq.client.MessageProperties;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The RabbitMQ lines, next to Kafka's in the same run: {@code drain-rabbitmq} is the cursor drain (the same backlog,
 * store and Dispatcher as {@code drain}) into {@link RabbitMqMessageBroker}, and {@code broker-rabbitmq} the node's own
 * ceiling — a bare publisher with confirms, the same message shape, at most five times the Dispatcher's in-flight
 * window unconfirmed, as {@code broker} is Kafka's; {@code latency-rabbitmq} is {@code latency} (the same writers,
 * store and Dispatcher) into RabbitMQ, read back by a consumer of every queue ({@link #latencyPath}). All publish
 * persistent messages to a per-key topology ({@link RabbitMqTopology#perKey}, one durable queue per --partitions),
 * deleted after the run. The node is Debian's
 * {@code rabbitmq-server} started by the test servers, on the same machine.
 */
final class RabbitMqScenarios {
    private static final AtomicInteger EXCHANGES = new AtomicInteger();

    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final ThroughputScenarios throughput;

    RabbitMqScenarios(BenchEnvironment env, BenchmarkOptions options, ThroughputScenarios throughput) {
        this.env = env;
        this.options = options;
        this.throughput = throughput;
    }

    /** {@code drain-rabbitmq}: the Dispatcher's drain of --rows rows into RabbitMQ. */
    ThroughputScenarios.Run drain(int rows, long seed) throws Exception {
        RabbitMqTopology topology = declare("drain");
        try (RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder().uri(env.rabbitMq().uri())
                .connectionName("bench-drain").build()) {
            return throughput.drainInto("drain-rabbitmq", rows, seed, topology.exchange(), broker);
        } finally {
            delete(topology);
        }
    }

    /** {@code broker-rabbitmq}: a bare publisher with confirms, --rows messages. */
    ThroughputScenarios.Run ceiling(int rows, long seed) throws Exception {
        RabbitMqTopology topology = declare("broker");
        String[] keys = Backlog.keys(options.keys);
        SplittableRandom random = new SplittableRandom(seed);
        byte[][] values = new byte[1024][options.valueBytes];
        for (byte[] v : values) {
            random.nextBytes(v);
        }
        ConcurrentSkipListSet<Long> unconfirmed = new ConcurrentSkipListSet<>();
        AtomicLong acked = new AtomicLong();
        AtomicLong nacked = new AtomicLong();
        AtomicLong lastAck = new AtomicLong();
        Semaphore window = new Semaphore(5 * options.maxInFlightRecords);
        CountDownLatch all = new CountDownLatch(1);
        CpuMeter cpu;
        long started;
        String cpuUsed;
        try (Connection connection = factory().newConnection("bench-broker-ceiling");
             Channel channel = connection.createChannel()) {
            channel.confirmSelect();
            channel.addConfirmListener((tag, multiple) -> settle(unconfirmed, tag, multiple, acked, window, lastAck,
                    all, rows), (tag, multiple) -> settle(unconfirmed, tag, multiple, nacked, window, lastAck, all,
                    rows));
            cpu = new CpuMeter(null);
            started = System.nanoTime();
            for (int i = 0; i < rows; i++) {
                window.acquire();
                unconfirmed.add(channel.getNextPublishSeqNo());
                AMQP.BasicProperties props = MessageProperties.PERSISTENT_BASIC;
                channel.basicPublish(topology.exchange(), keys[random.nextInt(keys.length)], true, props,
                        values[i & 1023]);
            }
            if (!all.await(options.timeout.toSeconds(), TimeUnit.SECONDS)) {
                Progress.say("RabbitMQ broker ceiling timed out after %s", options.timeout);
            }
            cpuUsed = cpu.describe(acked.get());
        } finally {
            delete(topology);
        }
        long ok = acked.get();
        return new ThroughputScenarios.Run("broker-rabbitmq", ok, (lastAck.get() - started) / 1e9, -1, 0,
                (nacked.get() == 0 ? "" : nacked.get() + " nacked; ") + cpuUsed);
    }

    /**
     * The RabbitMQ path of one {@code latency-rabbitmq} run: a per-key topology named after {@code prefix}, the
     * broker the Dispatcher publishes with, and (once {@link LatencyPath#consume consuming}) a consumer of every queue.
     */
    LatencyPath latencyPath(String prefix) throws Exception {
        RabbitMqTopology topology = declare(prefix);
        RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder().uri(env.rabbitMq().uri())
                .connectionName("bench-" + prefix).build();
        return new LatencyPath(topology, broker);
    }

    /** What {@link #latencyPath} made; {@link #close()} closes the consumer and the broker and deletes the topology. */
    final class LatencyPath implements AutoCloseable {
        private final RabbitMqTopology topology;
        private final RabbitMqMessageBroker broker;
        private Connection consumer;

        private LatencyPath(RabbitMqTopology topology, RabbitMqMessageBroker broker) {
            this.topology = topology;
            this.broker = broker;
        }

        /** The exchange: the records' topic. */
        String exchange() {
            return topology.exchange();
        }

        RabbitMqMessageBroker broker() {
            return broker;
        }

        /** Consumes every queue (automatic acknowledgement), handing each message's body to {@code arrived}. */
        void consume(Consumer<byte[]> arrived) throws Exception {
            consumer = factory().newConnection("bench-latency-consumer");
            DeliverCallback deliver = (tag, delivery) -> arrived.accept(delivery.getBody());
            for (String queue : topology.queues()) {
                consumer.createChannel().basicConsume(queue, true, deliver, tag -> { });
            }
        }

        @Override
        public void close() {
            try {
                if (consumer != null) {
                    consumer.close(5_000);
                }
            } catch (Exception e) {
                Progress.say("could not close the RabbitMQ consumer: %s", e);
            }
            broker.close(Duration.ofSeconds(5));
            delete(topology);
        }
    }

    /** A confirm for {@code tag} (and every earlier one if {@code multiple}): counted, the window reopened. */
    private static void settle(ConcurrentSkipListSet<Long> unconfirmed, long tag, boolean multiple, AtomicLong count,
                               Semaphore window, AtomicLong lastAck, CountDownLatch all, int rows) {
        int n = 0;
        if (multiple) {
            while (!unconfirmed.isEmpty() && unconfirmed.first() <= tag) {
                if (unconfirmed.pollFirst() != null) {
                    n++;
                }
            }
        } else if (unconfirmed.remove(tag)) {
            n = 1;
        }
        if (n > 0) {
            window.release(n);
            lastAck.set(System.nanoTime());
            if (count.addAndGet(n) >= rows) {
                all.countDown();
            }
        }
    }

    private RabbitMqTopology declare(String prefix) throws Exception {
        RabbitMqTopology topology = RabbitMqTopology.perKey("bench-" + prefix + "-" + ProcessHandle.current().pid()
                + "-" + EXCHANGES.incrementAndGet(), Math.max(1, options.partitions));
        try (Connection connection = factory().newConnection("bench-topology");
             Channel channel = connection.createChannel()) {
            topology.declare(channel);
        }
        return topology;
    }

    private void delete(RabbitMqTopology topology) {
        try (Connection connection = factory().newConnection("bench-topology");
             Channel channel = connection.createChannel()) {
            for (String queue : topology.queues()) {
                channel.queueDelete(queue);
            }
            channel.exchangeDelete(topology.exchange());
        } catch (Exception e) {
            Progress.say("could not delete %s: %s", topology, e);
        }
    }

    private ConnectionFactory factory() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(env.rabbitMq().uri());
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }
}
