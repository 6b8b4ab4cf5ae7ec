package dev.outbox.examples;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.rabbitmq.RabbitMqInboxConsumer;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqTopology;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the RabbitMQ page's snippets ({@link RabbitMqSnippets}) against a real node and Postgres. */
class RabbitMqSnippetsTest {

    @Test
    void theBrokerPublishesThroughThePerKeyTopologyAndTheInboxConsumerAppliesOnce() throws Exception {
        RabbitMqServer rabbit = TestServers.rabbitMq();
        JdbcServer postgres = TestServers.postgres();
        DataSource db = postgres.dataSource(postgres.createDatabase("rabbit_snippets"));
        try (java.sql.Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE invoices (order_id bigint NOT NULL, body text NOT NULL)");
        }
        PostgresInbox inbox = InboxSnippets.createInbox(db);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbit.uri());
        RabbitMqTopology orders;
        try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
            orders = RabbitMqSnippets.topology(channel);
        }
        UUID id = MessageIds.next();
        try (RabbitMqMessageBroker broker = RabbitMqSnippets.broker(rabbit.uri().toString());
             RabbitMqInboxConsumer consumer = RabbitMqSnippets.consumer(rabbit.uri().toString(), orders, db, inbox)) {
            for (int i = 0; i < 2; i++) { // the second time as after a crash of the leader: same message id
                OutboxRecord r = new OutboxRecord(i + 1, Instant.now(), OutboxMessage.of("orders", "42", "paid"), 0,
                        UUID.randomUUID(), id);
                assertThat(broker.send(r).toCompletableFuture().join()).isNull();
            }
            consumer.start();
            Await.untilOrFail(() -> consumer.applied() + consumer.duplicates() == 2, Duration.ofSeconds(30),
                    () -> consumer.applied() + " applied, " + consumer.duplicates() + " duplicates");
            assertThat(consumer.applied()).isEqualTo(1);
        }
        try (java.sql.Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT order_id, body FROM invoices")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getLong(1)).isEqualTo(42);
            assertThat(rs.getString(2)).isEqualTo("paid");
            assertThat(rs.next()).isFalse();
        }
    }
}
