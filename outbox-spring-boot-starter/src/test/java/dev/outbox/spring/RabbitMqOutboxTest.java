package dev.outbox.spring;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.outbox.Dispatcher;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.rabbitmq.RabbitMqHeaders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code outbox.broker=rabbitmq} on a real PostgreSQL and a real RabbitMQ node, with database leadership and no
 * Kafka at all: the starter builds the broker from {@code spring.rabbitmq.*} (host, port, credentials, virtual host)
 * and {@code outbox.rabbitmq.*} (a topic mapped to another exchange), and what the application publishes in its
 * transaction arrives, in order, in a queue bound to that exchange — and nothing of a rolled-back transaction does.
 */
@SpringBootTest(classes = TestApplication.class)
class RabbitMqOutboxTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final String EXCHANGE = "starter-rabbit-" + UUID.randomUUID();
    private static final String QUEUE = EXCHANGE + ".q";
    private static Connection connection;
    private static Channel channel;

    @Autowired
    OutboxPublisher outbox;
    @Autowired
    TransactionTemplate transaction;
    @Autowired
    OutboxDispatcherLifecycle lifecycle;

    @BeforeAll
    static void topology() throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(TestServers.rabbitMq().uri());
        connection = f.newConnection("starter-test");
        channel = connection.createChannel();
        channel.exchangeDeclare(EXCHANGE, "direct", true);
        channel.queueDeclare(QUEUE, true, false, false, null);
        channel.queueBind(QUEUE, EXCHANGE, "customer-7");
    }

    @AfterAll
    static void close() throws Exception {
        connection.close();
    }

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_rabbitmq");
        RabbitMqServer rabbit = TestServers.rabbitMq();
        URI uri = rabbit.uri();
        String[] user = uri.getRawUserInfo().split(":", 2);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("outbox.store.create-schema", () -> "true");
        registry.add("outbox.broker", () -> "rabbitmq");
        registry.add("outbox.dispatcher.leader-election", () -> "database");
        registry.add("spring.rabbitmq.host", uri::getHost);
        registry.add("spring.rabbitmq.port", uri::getPort);
        registry.add("spring.rabbitmq.username", () -> decode(user[0]));
        registry.add("spring.rabbitmq.password", () -> decode(user[1]));
        registry.add("spring.rabbitmq.virtual-host", () -> decode(uri.getRawPath().substring(1)));
        registry.add("outbox.rabbitmq.exchanges.starter-orders", () -> EXCHANGE);
        registry.add("outbox.rabbitmq.confirm-timeout", () -> "5s");
        registry.add("outbox.rabbitmq.connection-name", () -> "starter-outbox");
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    @Test
    void publishedInTheTransactionArrivesInTheBoundQueueInOrder() throws Exception {
        Dispatcher dispatcher = lifecycle.dispatcher();
        Await.untilOrFail(dispatcher::isLeader, TIMEOUT, () -> "the dispatcher leads (database election)");

        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            messages.add(OutboxMessage.builder("starter-orders", "customer-7")
                    .value(("order-" + i).getBytes(StandardCharsets.UTF_8)).header("type", "OrderPlaced").build());
        }
        transaction.executeWithoutResult(tx -> outbox.publish(messages));
        transaction.executeWithoutResult(tx -> {
            outbox.publish(OutboxMessage.of("starter-orders", "customer-7", "rolled back"));
            tx.setRollbackOnly();
        });
        transaction.executeWithoutResult(tx -> outbox.publish(OutboxMessage.of("starter-orders", "customer-7",
                "last")));

        List<GetResponse> received = new ArrayList<>();
        Await.untilOrFail(() -> {
            try {
                for (GetResponse r = channel.basicGet(QUEUE, true); r != null; r = channel.basicGet(QUEUE, true)) {
                    received.add(r);
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return received.size() >= 6;
        }, TIMEOUT, () -> received.size() + " of 6 received");

        assertThat(received).extracting(r -> new String(RabbitMqHeaders.value(r.getProps(), r.getBody()),
                StandardCharsets.UTF_8)).containsExactly("order-0", "order-1", "order-2", "order-3", "order-4",
                "last");
        GetResponse first = received.get(0);
        assertThat(first.getEnvelope().getExchange()).isEqualTo(EXCHANGE);
        assertThat(first.getEnvelope().getRoutingKey()).isEqualTo("customer-7");
        assertThat(first.getProps().getDeliveryMode()).isEqualTo(2);
        assertThat(first.getProps().getMessageId()).hasSize(36);
        assertThat(RabbitMqHeaders.headers(first.getProps()))
                .anySatisfy(h -> assertThat(h.name()).isEqualTo("type"));
        if (TestServers.rabbitMq().mode() == dev.outbox.testservers.ServerMode.EMBEDDED) {
            assertThat(TestServers.rabbitMq().rabbitmqctl("list_connections", "client_properties"))
                    .as("outbox.rabbitmq.connection-name").contains("starter-outbox");
        }
        assertThat(received).extracting(r -> RabbitMqHeaders.messageId(r.getProps())).doesNotHaveDuplicates();
    }
}
