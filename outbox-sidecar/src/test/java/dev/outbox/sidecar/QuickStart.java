package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;

import javax.sql.DataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * The quick start ({@code ./sidecar-quickstart.sh}): an embedded Postgres and an in-process Kafka, the sidecar jar
 * on a sample configuration, a few rows written with plain SQL (one of them poison), and the console's address.
 * Ctrl-C stops the sidecar (SIGTERM: it drains) and the servers. {@code --port N} serves the console on port N instead
 * of 8080.
 */
public final class QuickStart {
    private QuickStart() {
    }

    public static void main(String[] args) throws Exception {
        Path work = Files.createDirectories(Path.of("outbox-sidecar", "target", "quickstart"));
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String url = postgres.createDatabase("quickstart");
        DataSource db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        kafka.createTopic("orders", 3);
        int port = args.length == 2 && args[0].equals("--port") ? Integer.parseInt(args[1]) : 8080;
        Path config = work.resolve("outbox.yaml");
        Files.writeString(config, """
                # A sample configuration: see README "Sidecar" for every key.
                sidecar:
                  http:
                    port: %d
                  operator:
                    username: operator
                    password: ${OUTBOX_OPERATOR_PASSWORD}
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: %s
                        password: ${OUTBOX_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                        max-attempts: 3
                """.formatted(port, kafka.bootstrapServers(), url, postgres.username()));
        SidecarProcess sidecar = SidecarProcess.start(config, work.resolve("sidecar.log"), port,
                Map.of("OUTBOX_DB_PASSWORD", postgres.password(), "OUTBOX_OPERATOR_PASSWORD", "change-me"));
        sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(180));
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES"
                + " ('orders', 'order-1', convert_to('{\"order\":1,\"status\":\"placed\"}', 'UTF8')),"
                + " ('orders', 'order-2', convert_to('{\"order\":2,\"status\":\"placed\"}', 'UTF8')),"
                + " ('orders', 'order-1', convert_to('{\"order\":1,\"status\":\"paid\"}', 'UTF8')),"
                // Poison: a topic that does not exist; it is parked, for the console to show.
                + " ('no-such-topic', 'order-3', convert_to('{\"order\":3}', 'UTF8'))");
        System.out.printf("%nThe sidecar runs with %s (log: %s).%n"
                        + "Console:    http://127.0.0.1:%d/console  (user 'operator', password 'change-me')%n"
                        + "Health:     http://127.0.0.1:%d/actuator/health%n"
                        + "Prometheus: http://127.0.0.1:%d/actuator/prometheus%n"
                        + "Three rows went to the topic 'orders'; the fourth (topic 'no-such-topic') is parked.%n"
                        + "Ctrl-C stops everything.%n",
                config, work.resolve("sidecar.log"), port, port, port);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            sidecar.terminate();
            sidecar.awaitExit(Duration.ofSeconds(30));
            stopped.countDown();
        }));
        stopped.await();
    }
}
