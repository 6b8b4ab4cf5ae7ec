package dev.outbox.examples.spring;

import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Spring Boot orders example, run as written: its own {@code application.yml} (the README's configuration),
 * with only the servers' addresses and credentials replaced by the test servers' (embedded PostgreSQL, in-process
 * Kafka). An order posted over HTTP is committed with its event, and the event arrives on Kafka as JSON.
 */
@SpringBootTest(classes = OrdersApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class OrdersApplicationTest {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @LocalServerPort
    int port;
    @Autowired
    JdbcClient jdbc;

    @DynamicPropertySource
    static void servers(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("spring_orders");
        KAFKA.createTopic("order-events", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("ORDERS_DB_PASSWORD", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
    }

    @Test
    void aPostedOrderIsCommittedWithItsEventAndTheEventReachesKafka() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> created = http.send(post("{\"customer\":\"alice\",\"total\":12.50}"),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> rejected = http.send(post("{\"customer\":\"\",\"total\":1}"),
                HttpResponse.BodyHandlers.ofString());

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.body()).isEqualTo("{\"orderId\":1}");
        assertThat(rejected.statusCode()).isEqualTo(400);
        assertThat(jdbc.sql("SELECT count(*) FROM orders").query(Long.class).single()).isEqualTo(1);

        List<ConsumerRecord<String, String>> got = read("order-events", r -> r.key().equals("alice"));
        assertThat(got).extracting(ConsumerRecord::value)
                .containsExactly("{\"orderId\":1,\"customer\":\"alice\",\"total\":12.50}");
        assertThat(new String(got.get(0).headers().lastHeader("content-type").value(), StandardCharsets.UTF_8))
                .isEqualTo("application/json");
    }

    private HttpRequest post(String json) {
        return HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/orders"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
    }

    private static List<ConsumerRecord<String, String>> read(String topic,
                                                             java.util.function.Predicate<ConsumerRecord<String, String>> wanted) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers()),
                new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Await.untilOrFail(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(r -> {
                    if (wanted.test(r)) {
                        got.add(r);
                    }
                });
                return !got.isEmpty();
            }, Duration.ofSeconds(60), () -> "the order's event on " + topic);
        }
        return got;
    }
}
