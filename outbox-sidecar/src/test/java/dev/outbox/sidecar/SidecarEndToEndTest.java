package dev.outbox.sidecar;

import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The real jar, twice, with two outboxes (Postgres, and MySQL 8 with a topic prefix) and Kafka: rows written with plain
 * SQL arrive in per-key order; one of the two leads; a SIGKILLed leader is taken over with nothing lost; a poison row
 * is parked and handled through the operator API (authentication, CSRF, audit); cut off from Kafka for longer than
 * {@code readiness.max-fenced}, the sidecar is not ready, and ready again once Kafka is back; SIGTERM drains and exits
 * 0; no password or token ever appears in a log.
 */
class SidecarEndToEndTest {
    private static final String PASSWORD = "E2e-Pa55-never-logged";
    private static final String TOKEN = "e2e-token-0123456789abcdef";
    private static final String OPERATOR_PASSWORD = "operator-secret-pw";
    private static final String TOPIC = "sidecar-e2e";
    /** The MySQL outbox's rows name this topic; its topic prefix makes it {@link #MYSQL_TOPIC}. */
    private static final String PAYMENTS = "payments";
    private static final String MYSQL_TOPIC = "mysql." + PAYMENTS;
    private static final int KEYS = 8;

    private static DataSource db;
    private static DataSource mysqlDb;
    private static String mysqlUrl;
    private static KafkaServer kafka;
    private static String url;

    /** Configurations and logs, kept in target/ for a look after a failure. */
    private static Path dir;

    @BeforeAll
    static void servers() throws IOException {
        dir = Files.createDirectories(Path.of("target", "sidecar-e2e"));
        JdbcServer postgres = TestServers.postgres();
        url = postgres.createDatabase("sidecar_e2e");
        postgres.createUser("sidecar_e2e", PASSWORD);
        db = postgres.dataSource(url);
        PostgresStore.builder(db).table("orders_outbox").build().createSchema();
        JdbcServer mysql = TestServers.mysql();
        mysqlUrl = mysql.createDatabase("sidecar_e2e");
        mysql.createUser("sidecar_e2e", PASSWORD);
        mysqlDb = mysql.dataSource(mysqlUrl);
        MySqlStore.builder(mysqlDb).table("payments_outbox").build().createSchema();
        kafka = TestServers.kafka();
        kafka.createTopic(TOPIC, 3);
        kafka.createTopic(MYSQL_TOPIC, 2);
    }

    private static Path config(String name, int port) throws IOException {
        Path config = dir.resolve(name + ".yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  readiness:
                    max-fenced: 3s
                  operator:
                    username: operator
                    password: ${OPERATOR_PASSWORD}
                    token: %s
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: sidecar_e2e
                        password: ${E2E_DB_PASSWORD}
                      store:
                        table: orders_outbox
                      kafka:
                        leader-topic: sidecar-e2e-leader
                      dispatcher:
                        heartbeat-timeout: 2s
                        metrics-interval: 1s
                        max-attempts: 1
                    payments:
                      datasource:
                        url: %s
                        username: sidecar_e2e
                        password: ${E2E_DB_PASSWORD}
                      store:
                        table: payments_outbox
                      topic-prefix: "mysql."
                      kafka:
                        leader-topic: sidecar-e2e-payments-leader
                      dispatcher:
                        heartbeat-timeout: 2s
                """.formatted(port, TOKEN, kafka.bootstrapServers(), url, mysqlUrl));
        return config;
    }

    private static SidecarProcess start(String name) throws IOException {
        int port = SidecarProcess.freePort();
        return SidecarProcess.start(config(name, port), dir.resolve(name + ".log"), port,
                Map.of("E2E_DB_PASSWORD", PASSWORD, "OPERATOR_PASSWORD", OPERATOR_PASSWORD));
    }

    /** Writes {@code perKey} rows for each key with plain SQL; values are "key:n" from {@code from}. */
    private static void write(int from, int perKey) {
        StringBuilder sql = new StringBuilder("INSERT INTO orders_outbox (topic, key, value) VALUES ");
        List<String> rows = new ArrayList<>();
        for (int n = from; n < from + perKey; n++) {
            for (int k = 0; k < KEYS; k++) {
                rows.add("('" + TOPIC + "', 'k" + k + "', convert_to('k" + k + ":" + n + "', 'UTF8'))");
            }
        }
        Jdbc.execute(db, sql + String.join(", ", rows));
        List<String> payments = new ArrayList<>();
        for (int n = from; n < from + perKey; n++) {
            for (int k = 0; k < KEYS; k++) {
                payments.add("('" + PAYMENTS + "', 'k" + k + "', 'k" + k + ":" + n + "')");
            }
        }
        Jdbc.execute(mysqlDb, "INSERT INTO payments_outbox (topic, `key`, value) VALUES " + String.join(", ", payments));
    }

    private static boolean leads(SidecarProcess p) {
        try {
            HttpResponse<String> r = p.get("/actuator/health/outbox/orders", Map.of());
            return r.body().contains("\"status\":\"LEADER\"");
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static Map<String, String> basic() {
        return Map.of("Authorization", "Basic " + Base64.getEncoder().encodeToString(("operator:" + OPERATOR_PASSWORD)
                .getBytes(StandardCharsets.UTF_8)));
    }

    private static Map<String, String> bearer() {
        return Map.of("Authorization", "Bearer " + TOKEN);
    }

    @Test
    void harvestsInKeyOrderSurvivesAKilledLeaderServesOperatorsAndDrainsOnSigterm() throws IOException {
        try (SidecarProcess a = start("a"); SidecarProcess b = start("b");
             KafkaConsumer<String, String> consumer = consumer(TOPIC);
             KafkaConsumer<String, String> payments = consumer(MYSQL_TOPIC)) {
            a.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            b.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            Await.untilOrFail(() -> leads(a) ^ leads(b), Duration.ofSeconds(60), () -> "exactly one leader");

            write(0, 20);
            Map<String, List<Integer>> seen = new HashMap<>();
            readUntil(consumer, seen, 20);
            assertPerKeyOrder(seen, 20);
            Map<String, List<Integer>> seenPayments = new HashMap<>();
            readUntil(payments, seenPayments, 20);
            assertPerKeyOrder(seenPayments, 20);

            SidecarProcess leader = leads(a) ? a : b;
            SidecarProcess standby = leader == a ? b : a;
            leader.kill();
            write(20, 20);
            Await.untilOrFail(() -> leads(standby), Duration.ofSeconds(60), () -> "the standby takes over; log:\n"
                    + standby.log());
            readUntil(consumer, seen, 40);
            assertPerKeyOrder(seen, 40);
            readUntil(payments, seenPayments, 40);
            assertPerKeyOrder(seenPayments, 40);

            operatorApi(standby);

            // Cut off from Kafka, the leader fences itself; fenced for longer than max-fenced, it is not ready.
            kafka.stop();
            try {
                standby.awaitHttp("/actuator/health/liveness", "\"UP\"", Duration.ofSeconds(10));
                Await.untilOrFail(() -> standby.get("/actuator/health/readiness", Map.of()).statusCode() == 503,
                        Duration.ofSeconds(60), () -> "not ready while fenced: "
                                + standby.get("/actuator/health/readiness", Map.of()).body());
                assertThat(standby.get("/actuator/health/readiness", Map.of()).body()).contains("FENCED for");
            } finally {
                kafka.restart();
            }
            standby.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(90));

            standby.terminate();
            assertThat(standby.awaitExit(Duration.ofSeconds(60))).as("exit status after SIGTERM").isZero();
            assertThat(standby.log()).contains("Every outbox dispatcher is closed");
            for (SidecarProcess p : List.of(a, b)) {
                assertThat(p.log()).doesNotContain(PASSWORD).doesNotContain(OPERATOR_PASSWORD).doesNotContain(TOKEN);
            }
        }
    }

    /** A poison row is parked; the API lists, shows, refuses without credentials or CSRF token, replays, discards. */
    private static void operatorApi(SidecarProcess p) {
        // A row the store cannot read: header arrays of different lengths.
        Jdbc.execute(db, "INSERT INTO orders_outbox (topic, key, value, header_names, header_values) VALUES ('"
                + TOPIC + "', 'poison', convert_to('bad', 'UTF8'), '{a,b}', '{}')");
        Await.untilOrFail(() -> p.get("/api/outboxes/orders/parked?key=poison", bearer()).body().contains("header_names"),
                Duration.ofSeconds(30), () -> "the poison row is parked: "
                        + p.get("/api/outboxes/orders/parked", bearer()).body() + "\nlog:\n" + p.log());
        HttpResponse<String> list = p.get("/api/outboxes/orders/parked?reason=header_names", basic());
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(list.body()).contains("\"key\":\"poison\"").contains("\"total\":1");
        long id = Long.parseLong(list.body().replaceAll("(?s).*\"id\":(\\d+).*", "$1"));
        assertThat(p.get("/api/outboxes/orders/parked/" + id + "?format=hex", bearer()).body())
                .contains("\"value\":\"62 61 64\"");

        assertThat(p.get("/api/outboxes/orders/parked", Map.of()).statusCode()).as("no credentials").isEqualTo(401);
        assertThat(p.post("/api/outboxes/orders/parked/discard", "{\"ids\":[" + id + "]}", basic()).statusCode())
                .as("basic credentials without the CSRF token").isEqualTo(403);
        assertThat(p.post("/api/outboxes/orders/parked/discard", "{\"ids\":[" + id + "]}",
                Map.of("Authorization", "Bearer wrong-token-0123456789")).statusCode()).isEqualTo(401);

        // Basic authentication with the session's CSRF token, as the README describes: replay (the poison row comes
        // back, and is parked again under a new id).
        HttpResponse<String> csrf = p.get("/api/csrf", basic());
        String token = csrf.body().replaceAll("(?s).*\"token\":\"([^\"]+)\".*", "$1");
        String session = csrf.headers().allValues("set-cookie").stream().filter(c -> c.startsWith("JSESSIONID="))
                .map(c -> c.substring(0, c.indexOf(';'))).findFirst().orElseThrow();
        Map<String, String> withCsrf = new HashMap<>(basic());
        withCsrf.put("X-CSRF-TOKEN", token);
        withCsrf.put("Cookie", session);
        assertThat(p.post("/api/outboxes/orders/parked/replay", "{\"ids\":[" + id + "]}", withCsrf).body())
                .isEqualTo("{\"replayed\":1}");
        p.awaitLog("AUDIT 'operator' replayed 1 parked record(s) of outbox 'orders': [id " + id, Duration.ofSeconds(10));
        Await.untilOrFail(() -> Jdbc.queryLong(db, "SELECT count(*) FROM orders_outbox_parked WHERE key = 'poison' AND id > "
                + id) == 1, Duration.ofSeconds(30), () -> "the replayed poison row is parked again");
        long again = Jdbc.queryLong(db, "SELECT id FROM orders_outbox_parked WHERE key = 'poison'");

        HttpResponse<String> discarded = p.post("/api/outboxes/orders/parked/discard", "{\"ids\":[" + again + "]}",
                bearer());
        assertThat(discarded.body()).isEqualTo("{\"discarded\":1}");
        p.awaitLog("AUDIT 'token' discarded 1 parked record(s) of outbox 'orders': [id " + again + " (topic '" + TOPIC
                + "', key 'poison'", Duration.ofSeconds(10));
        assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM orders_outbox_parked")).isZero();
    }

    private static KafkaConsumer<String, String> consumer(String topic) {
        KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers()), new StringDeserializer(), new StringDeserializer());
        List<TopicPartition> partitions = c.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
        c.assign(partitions);
        c.seekToBeginning(partitions);
        return c;
    }

    /** Reads until every key's values 0..perKey-1 have been seen (duplicates allowed). */
    private static void readUntil(KafkaConsumer<String, String> c, Map<String, List<Integer>> seen, int perKey) {
        Await.untilOrFail(() -> {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                seen.computeIfAbsent(r.key(), k -> new ArrayList<>())
                        .add(Integer.parseInt(r.value().substring(r.value().indexOf(':') + 1)));
            }
            return seen.size() == KEYS && seen.values().stream().allMatch(v -> new TreeSet<>(v).size() >= perKey);
        }, Duration.ofSeconds(90), () -> "read so far: " + seen);
    }

    /** Per key, no value is seen after a greater one, except a redelivery of the latest ones (G2), none lost (G1). */
    private static void assertPerKeyOrder(Map<String, List<Integer>> seen, int perKey) {
        for (Map.Entry<String, List<Integer>> e : seen.entrySet()) {
            List<Integer> values = e.getValue();
            Set<Integer> distinct = new TreeSet<>(values);
            assertThat(distinct).as("key %s, nothing lost", e.getKey())
                    .containsAll(java.util.stream.IntStream.range(0, perKey).boxed().collect(Collectors.toList()));
            int max = -1;
            Map<Integer, Integer> firstAt = new LinkedHashMap<>();
            for (int i = 0; i < values.size(); i++) {
                firstAt.putIfAbsent(values.get(i), i);
            }
            for (int v : distinct) {
                assertThat(firstAt.get(v)).as("key %s: %d first seen after a greater value (%s)", e.getKey(), v, values)
                        .isGreaterThan(max);
                max = firstAt.get(v);
            }
        }
    }
}
