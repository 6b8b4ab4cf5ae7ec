package dev.outbox.sidecar;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.outbox.broker.rabbitmq.RabbitMqHeaders;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The real jar with {@code sidecar.rabbitmq} as its broker (host, port, user, virtual host, the password from a file)
 * on a real PostgreSQL and a real RabbitMQ node, leadership from the database and no Kafka at all: rows written with
 * plain SQL arrive in a queue bound to the exchange their topic is mapped to ({@code rabbitmq.exchanges}), in order;
 * the log names the node without its password, and SIGTERM drains and exits 0.
 */
class SidecarRabbitMqTest {
    private static final String DB_PASSWORD = "Rabbit-Db-Pa55-never-logged";
    private static final String TOPIC = "sidecar-rabbit-orders";

    private static DataSource db;
    private static String url;
    private static Path dir;
    private static String exchange;
    private static String queue;

    @BeforeAll
    static void servers() throws Exception {
        dir = Files.createDirectories(Path.of("target", "sidecar-rabbitmq"));
        JdbcServer postgres = TestServers.postgres();
        url = postgres.createDatabase("sidecar_rabbitmq");
        postgres.createUser("sidecar_rabbitmq", DB_PASSWORD);
        db = postgres.dataSource(url);
        PostgresStore.builder(db).table("orders_outbox").build().createSchema();
        exchange = "sidecar-rabbit-" + UUID.randomUUID();
        queue = exchange + ".q";
        try (Connection c = connect(); Channel ch = c.createChannel()) {
            ch.exchangeDeclare(exchange, "fanout", true);
            ch.queueDeclare(queue, true, false, false, null);
            ch.queueBind(queue, exchange, "");
        }
    }

    private static Connection connect() throws Exception {
        ConnectionFactory f = new ConnectionFactory();
        f.setUri(TestServers.rabbitMq().uri());
        return f.newConnection("sidecar-test");
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    @Test
    void publishesToTheMappedExchangeInOrderWithDatabaseLeadershipAndNoKafka() throws Exception {
        RabbitMqServer rabbit = TestServers.rabbitMq();
        URI uri = rabbit.uri();
        String[] user = uri.getRawUserInfo().split(":", 2);
        String rabbitPassword = decode(user[1]);
        Path passwordFile = dir.resolve("rabbit-password");
        Files.writeString(passwordFile, rabbitPassword + "\n");
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  rabbitmq:
                    host: %s
                    port: %d
                    username: %s
                    password-file: %s
                    virtual-host: "%s"
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: sidecar_rabbitmq
                        password: ${RABBIT_DB_PASSWORD}
                      store:
                        table: orders_outbox
                      rabbitmq:
                        exchanges:
                          %s: %s
                        confirm-timeout: 5s
                      dispatcher:
                        leader-election: database
                        heartbeat-timeout: 2s
                """.formatted(port, uri.getHost(), uri.getPort(), decode(user[0]), passwordFile,
                decode(uri.getRawPath().substring(1)), url, TOPIC, exchange));

        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("RABBIT_DB_PASSWORD", DB_PASSWORD));
             Connection c = connect(); Channel ch = c.createChannel()) {
            sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            sidecar.awaitHttp("/actuator/health/outbox/orders", "\"LEADER\"", Duration.ofSeconds(60));

            List<String> rows = new ArrayList<>();
            for (int n = 0; n < 20; n++) {
                rows.add("('" + TOPIC + "', 'k" + (n % 2) + "', convert_to('k" + (n % 2) + ":" + n + "', 'UTF8'))");
            }
            Jdbc.execute(db, "INSERT INTO orders_outbox (topic, key, value) VALUES " + String.join(", ", rows));

            List<GetResponse> received = new ArrayList<>();
            Await.untilOrFail(() -> {
                try {
                    for (GetResponse r = ch.basicGet(queue, true); r != null; r = ch.basicGet(queue, true)) {
                        received.add(r);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                return received.size() >= 20;
            }, Duration.ofSeconds(60), () -> received.size() + " of 20 received; log:\n" + sidecar.log());

            List<String> values = received.stream().map(r -> new String(RabbitMqHeaders.value(r.getProps(),
                    r.getBody()), StandardCharsets.UTF_8)).toList();
            for (String key : List.of("k0", "k1")) {
                List<Integer> order = values.stream().filter(v -> v.startsWith(key + ":"))
                        .map(v -> Integer.parseInt(v.substring(3))).toList();
                assertThat(order).as("key %s", key).hasSize(10).isSorted();
            }
            assertThat(received).allSatisfy(r -> assertThat(r.getEnvelope().getExchange()).isEqualTo(exchange));
            assertThat(received.get(0).getProps().getMessageId()).hasSize(36);

            sidecar.terminate();
            assertThat(sidecar.awaitExit(Duration.ofSeconds(60))).as("exit status after SIGTERM").isZero();
            String log = sidecar.log();
            assertThat(log).contains("-> RabbitMQ ").contains("RabbitMQ broker publishing to")
                    .contains("Every outbox dispatcher is closed")
                    .doesNotContain(DB_PASSWORD).doesNotContain(":" + rabbitPassword + "@");
            if (rabbitPassword.length() >= Redaction.MIN_REMEMBERED_LENGTH) {
                assertThat(log).doesNotContain(rabbitPassword);
            }
        }
    }
}
