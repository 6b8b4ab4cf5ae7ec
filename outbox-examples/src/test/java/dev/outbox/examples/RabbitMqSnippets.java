package dev.outbox.examples;

import com.rabbitmq.client.Channel;
import dev.outbox.Inbox;
import dev.outbox.broker.rabbitmq.RabbitMqHeaders;
import dev.outbox.broker.rabbitmq.RabbitMqInboxConsumer;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;

import javax.sql.DataSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;

/**
 * The RabbitMQ page's snippets (docs/rabbitmq.md), in compiled code that {@code RabbitMqSnippetsTest} runs against
 * a real node; {@code ReadmeSnippetsTest} checks that the page's copies still match them.
 */
final class RabbitMqSnippets {
    private RabbitMqSnippets() {
    }

    static RabbitMqMessageBroker broker(String uri) {
        // tag::broker[]
        RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder()
                .uri(uri)                                   // amqp://user:password@host:5672/vhost; never logged
                .confirmTimeout(Duration.ofSeconds(8))      // every record confirmed or failed within it
                .build();                                   // topic = exchange, key = routing key
        // end::broker[]
        return broker;
    }

    static RabbitMqTopology topology(Channel channel) throws IOException {
        // tag::topology[]
        RabbitMqTopology orders = RabbitMqTopology.perKey("orders", 4);  // exchange "orders", queues orders.0 .. 3
        orders.declare(channel);     // x-consistent-hash exchange; durable queues with x-single-active-consumer
        // end::topology[]
        return orders;
    }

    static RabbitMqInboxConsumer consumer(String uri, RabbitMqTopology orders, DataSource dataSource, Inbox inbox) {
        // tag::consumer[]
        RabbitMqInboxConsumer consumer = RabbitMqInboxConsumer.builder()
                .uri(uri)
                .queues(orders.queues())             // every instance consumes all; one at a time per queue
                .consumerName("billing")
                .dataSource(dataSource)              // the database of the inbox and of your effects
                .inbox(inbox)
                .handler((connection, delivery, messageId) -> {
                    byte[] value = RabbitMqHeaders.value(delivery.getProperties(), delivery.getBody());
                    try (PreparedStatement s = connection.prepareStatement(
                            "INSERT INTO invoices (order_id, body) VALUES (?, ?)")) {
                        s.setLong(1, Long.parseLong(delivery.getEnvelope().getRoutingKey()));
                        s.setString(2, new String(value, StandardCharsets.UTF_8));
                        s.executeUpdate();          // committed by the consumer, with the inbox entry
                    }
                })
                .build();
        // end::consumer[]
        return consumer;
    }
}
