package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.ShutdownSignalException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RabbitMqServerTest {

    private static RabbitMqServer rabbit() {
        return TestServers.rabbitMq();
    }

    private static Connection connect() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbit().uri());
        factory.setAutomaticRecoveryEnabled(false);
        factory.setConnectionTimeout(5_000);
        return factory.newConnection("rabbitmq-server-test");
    }

    @Test
    void startsEmbeddedFromTheDebianPackageOnItsOwnPorts() throws Exception {
        assertThat(rabbit().mode()).isEqualTo(ServerMode.EMBEDDED);
        assertThat(rabbit().version()).matches("[0-9]+\\.[0-9]+\\.[0-9]+");
        assertThat(rabbit().uri().getHost()).isEqualTo("127.0.0.1");
        assertThat(rabbit().uri().getPort()).isNotEqualTo(5672);
        assertThat(rabbit().toString()).doesNotContain("guest:guest").contains(rabbit().version());
        assertThat(TestServers.rabbitMq()).isSameAs(rabbit());
        try (Connection c = connect()) {
            assertThat(c.getServerProperties().get("version").toString()).isEqualTo(rabbit().version());
        }
    }

    @Test
    void publishesAndConsumesThroughTheConsistentHashExchangePlugin() throws Exception {
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            ch.exchangeDeclare("server-test-hash", "x-consistent-hash", false, true, null);
            String queue = ch.queueDeclare("", false, true, true, null).getQueue();
            ch.queueBind(queue, "server-test-hash", "1");
            ch.confirmSelect();
            ch.basicPublish("server-test-hash", "some-key", true, null, "v".getBytes(StandardCharsets.UTF_8));
            ch.waitForConfirmsOrDie(10_000);

            GetResponse got = ch.basicGet(queue, true);
            assertThat(got).isNotNull();
            assertThat(new String(got.getBody(), StandardCharsets.UTF_8)).isEqualTo("v");
        }
    }

    @Test
    void closeAllConnectionsClosesClientConnectionsAndTheNodeStaysUp() throws Exception {
        Connection victim = connect();
        try {
            CompletableFuture<ShutdownSignalException> closed = new CompletableFuture<>();
            victim.addShutdownListener(closed::complete);

            int count = rabbit().closeAllConnections();

            assertThat(count).isGreaterThanOrEqualTo(1);
            ShutdownSignalException reason = closed.get(10, TimeUnit.SECONDS);
            assertThat(reason.isInitiatedByApplication()).as("closed by the broker").isFalse();
            assertThat(((AMQP.Connection.Close) reason.getReason()).getReplyCode()).isEqualTo(320); // CONNECTION_FORCED
            assertThat(victim.isOpen()).isFalse();
        } finally {
            victim.abort(1000);
        }
        try (Connection again = connect()) {
            assertThat(again.isOpen()).isTrue();
        }
    }

    @Test
    void rabbitmqctlRunsAgainstTheNode() {
        assertThat(rabbit().rabbitmqctl("eval", "node().")).isEqualTo("'" + rabbit().toString()
                .replaceFirst(".* as ", "") + "'");
        assertThatThrownBy(() -> rabbit().rabbitmqctl("no_such_command")).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void restartKeepsDurableQueuesAndPersistentMessages() throws Exception {
        String queue = "server-test-durable";
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            ch.queueDelete(queue);
            ch.queueDeclare(queue, true, false, false, Map.of());
            ch.confirmSelect();
            ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2).build(),
                    "kept".getBytes(StandardCharsets.UTF_8));
            ch.waitForConfirmsOrDie(10_000);
        }

        rabbit().restart();

        try (Connection c = connect(); Channel ch = c.createChannel()) {
            GetResponse got = ch.basicGet(queue, true);
            assertThat(got).as("message after restart").isNotNull();
            assertThat(new String(got.getBody(), StandardCharsets.UTF_8)).isEqualTo("kept");
            ch.queueDelete(queue);
        }
    }

    @Test
    void whileStoppedClientsCannotConnect() throws Exception {
        rabbit().stop();
        try {
            assertThatThrownBy(RabbitMqServerTest::connect).isInstanceOf(java.io.IOException.class);
            rabbit().stop(); // idempotent
            assertThatThrownBy(() -> rabbit().closeAllConnections()).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("stopped");
        } finally {
            rabbit().restart();
        }
        try (Connection c = connect()) {
            assertThat(c.isOpen()).isTrue();
        }
    }

    @Test
    void anExistingNodeIsNeverStoppedAndItsPasswordNeverShown() {
        RabbitMqServer external = new ExternalRabbitMq("amqp://app:s3cret@rabbit.example:5672/%2F", "a test");

        assertThat(external.mode()).isEqualTo(ServerMode.EXTERNAL);
        assertThat(external.toString()).contains("app:***@rabbit.example").doesNotContain("s3cret");
        assertThatThrownBy(external::restart).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageNotContaining("s3cret");
        assertThatThrownBy(external::closeAllConnections).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> new ExternalRabbitMq("http://x:y@h/", "a test"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("amqp://")
                .hasMessageNotContaining("x:y");
    }
}
