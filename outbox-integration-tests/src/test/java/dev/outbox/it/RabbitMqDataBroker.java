package dev.outbox.it;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testservers.RabbitMqServer;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * The harness's data path on a RabbitMQ node: the data topic is an exchange of the per-key topology
 * ({@link RabbitMqTopology#perKey}: a consistent-hash exchange over {@link Scenario#PARTITIONS} durable queues, each
 * with a single active consumer), each dispatcher publishes with a {@link RabbitMqMessageBroker} (confirm timeout the
 * scenario's delivery timeout, {@code maxMessageSize} its largest record), and the {@link QueueWatcher} consumes every
 * queue. A topic never declared is an exchange that does not exist: a record for it fails permanently.
 */
final class RabbitMqDataBroker implements DataBroker {
    private final RabbitMqServer rabbit;

    RabbitMqDataBroker(RabbitMqServer rabbit) {
        this.rabbit = rabbit;
    }

    @Override
    public String name() {
        return "RabbitMQ";
    }

    @Override
    public void createTopic(String topic, int partitions, int maxMessageBytes) {
        // The node's own max_message_size stays its default: the dispatchers' maxMessageSize refuses larger records.
        try (Connection c = factory().newConnection("e2e-setup-" + topic); Channel ch = c.createChannel()) {
            RabbitMqTopology.perKey(topic, partitions).declare(ch);
        } catch (Exception e) {
            throw new IllegalStateException("could not declare the per-key topology of " + topic, e);
        }
    }

    @Override
    public MessageBroker newBroker(String client, Duration deliveryTimeout, int maxMessageBytes) {
        return RabbitMqMessageBroker.builder().uri(rabbit.uri())
                .confirmTimeout(deliveryTimeout)
                .maxMessageSize(maxMessageBytes)
                .connectionName(client)
                .build();
    }

    @Override
    public DataWatcher newWatcher(String topic) {
        return new QueueWatcher(topic);
    }

    /** Every queue of the topic is empty: no message ready, none delivered and not yet acknowledged. */
    @Override
    public BooleanSupplier consumedAll(String topic, DataWatcher watcher) {
        List<String> queues = RabbitMqTopology.perKey(topic, Scenario.PARTITIONS).queues();
        return () -> {
            Map<String, Long> messages = new HashMap<>();
            for (String line : rabbit.rabbitmqctl("list_queues", "-q", "-p", virtualHost(), "name", "messages")
                    .split("\n")) {
                String[] cells = line.trim().split("\\s+");
                if (cells.length == 2 && cells[1].matches("\\d+")) {
                    messages.put(cells[0], Long.parseLong(cells[1]));
                }
            }
            return queues.stream().allMatch(q -> messages.get(q) != null && messages.get(q) == 0);
        };
    }

    @Override
    public String kafkaBootstrap() {
        return null;
    }

    private String virtualHost() {
        String path = rabbit.uri().getRawPath();
        return path == null || path.length() <= 1 ? "/" : URLDecoder.decode(path.substring(1), StandardCharsets.UTF_8);
    }

    private ConnectionFactory factory() {
        ConnectionFactory f = new ConnectionFactory();
        try {
            f.setUri(rabbit.uri());
        } catch (Exception e) {
            throw new IllegalStateException("not an AMQP URI: " + rabbit, e);
        }
        f.setConnectionTimeout(5_000);
        f.setRequestedHeartbeat(5);
        // Recovers the connection, its channels and consumers after the node closed it or restarted.
        f.setAutomaticRecoveryEnabled(true);
        f.setTopologyRecoveryEnabled(true);
        f.setNetworkRecoveryInterval(500);
        return f;
    }

    /**
     * The scenario's consumer on RabbitMQ: one channel per queue of the topology, each consuming its queue (the single
     * active consumer) and acknowledging each message once it was checked. The routing key is the record's key. After
     * the connection was lost the node delivers again, in order, what the watcher had not acknowledged: a copy marked
     * redelivered that the watcher already took is its own repeat ({@link DataWatcher#takeRedelivered}).
     */
    private final class QueueWatcher extends DataWatcher {
        private final String topic;
        private Connection connection;

        QueueWatcher(String topic) {
            this.topic = topic;
        }

        @Override
        void start() {
            try {
                connection = factory().newConnection("e2e-watcher-" + topic);
                for (String queue : RabbitMqTopology.perKey(topic, Scenario.PARTITIONS).queues()) {
                    Channel ch = connection.createChannel();
                    ch.basicQos(200);
                    ch.basicConsume(queue, false, new DefaultConsumer(ch) {
                        @Override
                        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties,
                                                   byte[] body) throws IOException {
                            long now = System.nanoTime();
                            String where = "queue " + queue + ", delivery " + envelope.getDeliveryTag();
                            try {
                                if (envelope.isRedeliver()) {
                                    takeRedelivered(envelope.getRoutingKey(), body, where, now);
                                } else {
                                    take(envelope.getRoutingKey(), body, where, now);
                                }
                            } catch (RuntimeException e) {
                                failure = e;
                                throw e;
                            }
                            getChannel().basicAck(envelope.getDeliveryTag(), false);
                        }
                    });
                }
            } catch (IOException | java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("could not consume " + topic, e);
            }
        }

        @Override
        public void close() {
            if (connection != null) {
                try {
                    connection.close(5_000);
                } catch (IOException | RuntimeException e) {
                    // closed already (the node went away): nothing to release
                }
            }
        }

        @Override
        public String toString() {
            return "watcher of the queues of " + topic;
        }
    }
}
