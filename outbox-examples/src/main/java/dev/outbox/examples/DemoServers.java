package dev.outbox.examples;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The demo's servers: the existing ones its options name, or embedded ones started on first use (PostgreSQL and Kafka
 * from Maven artifacts, RabbitMQ from Debian's {@code rabbitmq-server}, as the tests start them); and the topic the
 * order events go to, created if missing — a Kafka topic, or on RabbitMQ the per-key topology of an exchange.
 */
final class DemoServers {
    private final DemoOptions options;
    private final Consumer<String> say;

    DemoServers(DemoOptions options, Consumer<String> say) {
        this.options = options;
        this.say = say;
    }

    /** JDBC URL, user, password. */
    String[] postgres() {
        if (options.postgresUrl() != null) {
            say.accept("Using PostgreSQL at " + options.postgresUrl());
            return new String[]{options.postgresUrl(), options.postgresUser(), options.postgresPassword()};
        }
        embeddedOnly();
        long t0 = System.nanoTime();
        JdbcServer server = TestServers.postgres();
        String url = server.createDatabase("outbox_demo");
        say.accept(String.format("PostgreSQL %s (%s) ready in %.1f s at %s", server.version(),
                server.mode().toString().toLowerCase(Locale.ROOT), (System.nanoTime() - t0) / 1e9, url));
        return new String[]{url, server.username(), server.password()};
    }

    /** Kafka's bootstrap servers. */
    String kafka() {
        if (options.kafkaBootstrap() != null) {
            say.accept("Using Kafka at " + options.kafkaBootstrap());
            return options.kafkaBootstrap();
        }
        embeddedOnly();
        long t0 = System.nanoTime();
        KafkaServer kafka;
        PrintStream stdout = System.out;
        System.setOut(new PrintStream(OutputStream.nullOutputStream())); // Kafka's storage formatter chats there
        try {
            kafka = TestServers.kafka();
        } finally {
            System.setOut(stdout);
        }
        say.accept(String.format("Kafka %s (%s) ready in %.1f s at %s", kafka.version(),
                kafka.mode().toString().toLowerCase(Locale.ROOT), (System.nanoTime() - t0) / 1e9,
                kafka.bootstrapServers()));
        return kafka.bootstrapServers();
    }

    /** The RabbitMQ node's AMQP URI (it may carry a password: never printed). */
    String rabbitMq() {
        if (options.rabbitMqUri() != null) {
            say.accept("Using RabbitMQ at " + options.rabbitMqUri().replaceFirst("//([^/@:]*):[^/@]*@", "//$1@"));
            return options.rabbitMqUri();
        }
        long t0 = System.nanoTime();
        RabbitMqServer rabbit = TestServers.rabbitMq();
        say.accept(String.format("%s ready in %.1f s", rabbit, (System.nanoTime() - t0) / 1e9));
        return rabbit.uri().toString();
    }

    /** Unless told otherwise, the demo never looks for Docker: it starts its servers from Maven artifacts. */
    private static void embeddedOnly() {
        if (System.getProperty(TestServers.MODE_PROPERTY) == null) {
            System.setProperty(TestServers.MODE_PROPERTY, "embedded");
        }
    }

    /** Creates the orders topic if missing; returns whether it created it. */
    boolean createTopic(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(options.topic(), Optional.of(options.partitions()),
                    Optional.empty()))).all().get(30, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicExistsException) {
                return false;
            }
            throw new IllegalStateException("could not create topic " + options.topic() + ": " + e.getCause(),
                    e.getCause());
        }
    }

    /**
     * Declares the per-key topology of the orders exchange on RabbitMQ (nothing changes if it exists as declared):
     * a consistent-hash exchange named after the topic over {@code --partitions} durable queues, each with a single
     * active consumer, so that each customer's events stay in order for the consumer.
     */
    RabbitMqTopology declareTopology(String uri) throws Exception {
        RabbitMqTopology topology = RabbitMqTopology.perKey(options.topic(), options.partitions());
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        try (Connection c = factory.newConnection("outbox-demo-setup"); Channel ch = c.createChannel()) {
            topology.declare(ch);
        }
        return topology;
    }
}
