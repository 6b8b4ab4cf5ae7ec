package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import javax.sql.DataSource;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator API of the real jar over real HTTP (Postgres, Kafka): every 4xx says why in JSON, naming the
 * parameter and the value; {@code limit} above its maximum is refused; no credential is a 401 with a challenge,
 * a credential without the CSRF token a 403; a replay or discard of everything matching a filter (confirmed by the
 * number expected) says how many it did, and they are published or gone; a record is found by its message id; a
 * large value is shown in part and downloaded whole (in the console too).
 */
class SidecarOperatorApiTest {
    private static final String OPERATOR_PASSWORD = "api-operator-pw";
    private static final String TOKEN = "api-token-0123456789abcdef";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static DataSource db;
    private static KafkaServer kafka;
    private static SidecarProcess sidecar;

    @BeforeAll
    static void start() throws IOException {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-api"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_api");
        db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        kafka = TestServers.kafka();
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  operator:
                    username: operator
                    password: ${API_OPERATOR_PASSWORD}
                    token: %s
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: %s
                        password: ${API_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                        max-attempts: 1
                """.formatted(port, TOKEN, kafka.bootstrapServers(), url, postgres.username()));
        sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("API_DB_PASSWORD", postgres.password(), "API_OPERATOR_PASSWORD", OPERATOR_PASSWORD));
        sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
    }

    @AfterAll
    static void stop() {
        if (sidecar != null) {
            sidecar.close();
        }
    }

    @Test
    void everyRefusalSaysWhyInJsonNamingTheParameterAndTheValue() {
        String parked = "/api/outboxes/orders/parked";
        assertError(sidecar.get(parked + "?limit=501", bearer()), 400, "limit must be between 1 and 500: 501");
        assertError(sidecar.get(parked + "?limit=0", bearer()), 400, "limit must be between 1 and 500: 0");
        assertError(sidecar.get(parked + "?limit=ten", bearer()), 400, "limit must be a whole number: 'ten'");
        assertError(sidecar.get(parked + "?after=-1", bearer()), 400, "after must not be negative: -1");
        assertError(sidecar.get(parked + "?messageId=nope", bearer()), 400,
                "messageId must be a message id, a UUID such as 0190a6d2-7e1c-7b3a-9c4f-2d5e6f708192: 'nope'");
        assertError(sidecar.get(parked + "?parkedFrom=yesterday", bearer()), 400,
                "parkedFrom must be an instant in UTC such as 2025-01-31T12:00:00Z: 'yesterday'");
        assertError(sidecar.get(parked + "?parkedFrom=2025-02-01T00:00:00Z&parkedBefore=2025-01-01T00:00:00Z",
                bearer()), 400, "parkedFrom must be before parkedBefore: '2025-02-01T00:00:00Z' is not before"
                + " '2025-01-01T00:00:00Z'");
        assertError(sidecar.get("/api/outboxes/nope/parked", bearer()), 404, "no outbox named 'nope'");
        assertError(sidecar.get(parked + "/987654321", bearer()), 404, "no parked record 987654321 in outbox 'orders'");
        assertError(sidecar.get(parked + "/abc", bearer()), 400, "id must be a whole number: 'abc'");
        assertError(sidecar.get(parked + "/1?format=xml", bearer()), 400, "format must be text or hex: 'xml'");

        assertThat(message(sidecar.post(parked + "/replay", "not json", bearer()), 400))
                .startsWith("the request body must be JSON such as {\"ids\":[42]}");
        assertThat(message(sidecar.post(parked + "/replay", "{\"filter\":{},\"expected\":\"three\"}", bearer()), 400))
                .contains("expected is not valid").contains("\"three\"");
        assertError(sidecar.post(parked + "/replay", "{}", bearer()), 400,
                "select at least one record: ids, or a filter with the number expected");
        assertError(sidecar.post(parked + "/replay", "{\"ids\":[1],\"filter\":{}}", bearer()), 400,
                "select by ids or by a filter, not both");
        assertError(sidecar.post(parked + "/discard", "{\"filter\":{\"topic\":\"x\"}}", bearer()), 400,
                "expected is required with a filter: the number of records the filter matches (the list's total),"
                        + " as a confirmation");
        assertError(sidecar.post(parked + "/discard", "{\"filter\":{\"messageId\":\"42\"},\"expected\":1}", bearer()),
                400, "filter.messageId must be a message id, a UUID such as 0190a6d2-7e1c-7b3a-9c4f-2d5e6f708192: '42'");
        String ids = LongStream.rangeClosed(1, 501).mapToObj(Long::toString).collect(Collectors.joining(","));
        assertError(sidecar.post(parked + "/discard", "{\"ids\":[" + ids + "]}", bearer()), 400,
                "ids must hold at most 500 records: 501 given; to act on more, use a filter");
    }

    @Test
    void withoutInboxesConfiguredTheApiSaysSoAndTheConsoleHasNoInboxSection() {
        assertThat(sidecar.get("/api/inboxes", bearer()).body()).isEqualTo("[]");
        assertError(sidecar.get("/api/inboxes/billing/failed?consumer=billing", bearer()), 404,
                "no inbox named 'billing': no inbox is configured (sidecar.inboxes)");
        HttpResponse<String> overview = sidecar.get("/console", basic(OPERATOR_PASSWORD));
        assertThat(overview.statusCode()).isEqualTo(200);
        assertThat(overview.body()).contains("<table id='outboxes'>").doesNotContain("Inbox");
    }

    @Test
    void noCredentialIs401WithAChallengeAndACredentialWithoutTheCsrfTokenIs403() {
        String discard = "/api/outboxes/orders/parked/discard";
        for (HttpResponse<String> r : List.of(sidecar.get("/api/outboxes", Map.of()),
                sidecar.post(discard, "{\"ids\":[1]}", Map.of()),
                sidecar.post(discard, "{\"ids\":[1]}", Map.of("Cookie", "JSESSIONID=0123456789ABCDEF0123456789ABCDEF")))) {
            assertError(r, 401, "authentication required: HTTP basic or a bearer token");
            assertThat(r.headers().allValues("WWW-Authenticate")).as(r.request().method() + " " + r.request().uri())
                    .containsExactlyInAnyOrder("Basic realm=\"outbox-sidecar\", charset=\"UTF-8\"",
                            "Bearer realm=\"outbox-sidecar\"");
        }
        HttpResponse<String> wrongPassword = sidecar.get("/api/outboxes", basic("not-the-password"));
        assertError(wrongPassword, 401, "the user name or password is not right");
        assertThat(wrongPassword.headers().allValues("WWW-Authenticate")).isNotEmpty();
        HttpResponse<String> wrongToken = sidecar.post(discard, "{\"ids\":[1]}",
                Map.of("Authorization", "Bearer wrong-token-0123456789"));
        assertError(wrongToken, 401, "the bearer token is not the configured one");
        assertThat(wrongToken.headers().allValues("WWW-Authenticate"))
                .contains("Bearer realm=\"outbox-sidecar\", error=\"invalid_token\"");

        String csrfReason = "the CSRF token is missing or wrong: a state-changing request authenticated by HTTP basic"
                + " or a session sends the token of GET /api/csrf in the header X-CSRF-TOKEN, with the session's"
                + " cookie (a request with the bearer token needs none)";
        assertError(sidecar.post(discard, "{\"ids\":[1]}", basic(OPERATOR_PASSWORD)), 403, csrfReason);
        HttpResponse<String> csrf = sidecar.get("/api/csrf", basic(OPERATOR_PASSWORD));
        String session = csrf.headers().allValues("set-cookie").stream().filter(c -> c.startsWith("JSESSIONID="))
                .map(c -> c.substring(0, c.indexOf(';'))).findFirst().orElseThrow();
        assertError(sidecar.post(discard, "{\"ids\":[1]}", Map.of("Cookie", session)), 403, csrfReason);
        Map<String, String> withToken = new HashMap<>(basic(OPERATOR_PASSWORD));
        withToken.put("Cookie", session);
        withToken.put("X-CSRF-TOKEN", json(csrf).get("token").asString());
        assertThat(sidecar.post(discard, "{\"ids\":[987654321]}", withToken).body())
                .as("basic with the session's token").isEqualTo("{\"discarded\":0}");
    }

    @Test
    void replaysAndDiscardsEverythingMatchingAFilterConfirmedByTheNumberAndSaysHowMany() throws Exception {
        String a = "sidecar-api-bulk-a";
        String b = "sidecar-api-bulk-b";
        // The topics do not exist yet: the rows are parked ("topic ... does not exist").
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES ('" + a + "', 'a0', convert_to('a0', 'UTF8')),"
                + " ('" + b + "', 'b0', convert_to('b0', 'UTF8')), ('" + a + "', 'a1', convert_to('a1', 'UTF8')),"
                + " ('" + a + "', 'a2', convert_to('a2', 'UTF8')), ('" + b + "', 'b1', convert_to('b1', 'UTF8'))");
        awaitParked("topic IN ('" + a + "', '" + b + "')", 5);
        kafka.createTopic(a, 1);

        JsonNode listed = json(sidecar.get("/api/outboxes/orders/parked?topic=" + a, bearer()));
        assertThat(listed.get("total").asLong()).isEqualTo(3);
        String filterA = "{\"filter\":{\"topic\":\"" + a + "\"},\"expected\":";
        assertError(sidecar.post("/api/outboxes/orders/parked/replay", filterA + "2}", bearer()), 409,
                "3 record(s) match the filter now, not the 2 expected: list them again and confirm the new number");
        assertThat(parkedCount("topic = '" + a + "'")).as("nothing replayed").isEqualTo(3);

        assertThat(sidecar.post("/api/outboxes/orders/parked/replay", filterA + "3}", bearer()).body())
                .isEqualTo("{\"replayed\":3}");
        assertThat(read(a, 3)).as("published in their order").containsExactly("a0", "a1", "a2");
        assertThat(parkedCount("topic = '" + a + "'")).isZero();
        sidecar.awaitLog("AUDIT 'token' replayed 3 parked record(s) of outbox 'orders' matching topic '" + a
                + "' (part 1 of 1): [id ", Duration.ofSeconds(10));

        // Discarded with basic authentication and the session's CSRF token; the filter combines topic and reason.
        HttpResponse<String> csrf = sidecar.get("/api/csrf", basic(OPERATOR_PASSWORD));
        Map<String, String> withCsrf = new HashMap<>(basic(OPERATOR_PASSWORD));
        withCsrf.put("X-CSRF-TOKEN", json(csrf).get("token").asString());
        withCsrf.put("Cookie", csrf.headers().allValues("set-cookie").stream().filter(c -> c.startsWith("JSESSIONID="))
                .map(c -> c.substring(0, c.indexOf(';'))).findFirst().orElseThrow());
        assertThat(sidecar.post("/api/outboxes/orders/parked/discard", "{\"filter\":{\"topic\":\"" + b + "\","
                + "\"reason\":\"does not exist\"},\"expected\":2}", withCsrf).body()).isEqualTo("{\"discarded\":2}");
        assertThat(parkedCount("topic = '" + b + "'")).isZero();
        sidecar.awaitLog("AUDIT 'operator' discarded 2 parked record(s) of outbox 'orders' matching topic '" + b
                + "', reason containing 'does not exist' (part 1 of 1): [id ", Duration.ofSeconds(10));
        assertError(sidecar.post("/api/outboxes/orders/parked/discard", "{\"filter\":{\"topic\":\"" + b + "\"},"
                + "\"expected\":2}", bearer()), 409, "0 record(s) match the filter now, not the 2 expected: list them"
                + " again and confirm the new number");
    }

    @Test
    void aRecordIsFoundByItsMessageId() {
        String topic = "sidecar-api-message-id";
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES ('" + topic + "', 'm0', convert_to('m0', 'UTF8')),"
                + " ('" + topic + "', 'm1', convert_to('m1', 'UTF8'))");
        awaitParked("topic = '" + topic + "'", 2);
        String messageId = Jdbc.queryString(db, "SELECT CAST(message_id AS text) FROM outbox_parked WHERE key = 'm1'");
        assertThat(messageId).isNotBlank();

        for (String given : List.of(messageId, messageId.toUpperCase(java.util.Locale.ROOT))) {
            JsonNode found = json(sidecar.get("/api/outboxes/orders/parked?messageId=" + given, bearer()));
            assertThat(found.get("total").asLong()).isEqualTo(1);
            assertThat(found.get("records").get(0).get("key").asString()).isEqualTo("m1");
            assertThat(found.get("records").get(0).get("messageId").asString()).isEqualTo(messageId);
        }
        long id = json(sidecar.get("/api/outboxes/orders/parked?messageId=" + messageId, bearer())).get("records")
                .get(0).get("id").asLong();
        assertThat(json(sidecar.get("/api/outboxes/orders/parked/" + id, bearer())).get("record").get("messageId")
                .asString()).isEqualTo(messageId);
        assertThat(json(sidecar.get("/api/outboxes/orders/parked?topic=" + topic, bearer())).get("records"))
                .extracting(r -> r.get("messageId").asString()).doesNotContainNull().contains(messageId).hasSize(2);
    }

    @Test
    void aLargeValueIsShownInPartAndDownloadedWhole() throws Exception {
        String topic = "sidecar-api-large";
        // 2 MiB of ff fe: not UTF-8, shown as hex. And a tombstone.
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES ('" + topic + "', 'large',"
                + " decode(repeat('fffe', 1048576), 'hex')), ('" + topic + "', 'tombstone', NULL)");
        awaitParked("topic = '" + topic + "'", 2);
        long id = Jdbc.queryLong(db, "SELECT id FROM outbox_parked WHERE key = 'large'");
        long tombstone = Jdbc.queryLong(db, "SELECT id FROM outbox_parked WHERE key = 'tombstone'");

        JsonNode shown = json(sidecar.get("/api/outboxes/orders/parked/" + id, bearer()));
        assertThat(shown.get("size").asInt()).isEqualTo(2 * 1024 * 1024);
        assertThat(shown.get("truncated").asBoolean()).isTrue();
        assertThat(shown.get("format").asString()).isEqualTo("hex");
        assertThat(shown.get("value").asString()).hasSize(4096 * 3 - 1).startsWith("ff fe ff fe");
        String valueUrl = shown.get("valueUrl").asString();
        assertThat(valueUrl).isEqualTo("/api/outboxes/orders/parked/" + id + "/value");

        HttpRequest.Builder download = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sidecar.port()
                + valueUrl)).timeout(Duration.ofSeconds(30));
        bearer().forEach(download::header);
        HttpResponse<byte[]> value = HTTP.send(download.build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(value.statusCode()).isEqualTo(200);
        assertThat(value.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
        assertThat(value.headers().firstValue("Content-Disposition"))
                .hasValue("attachment; filename=\"orders-parked-" + id + ".bin\"");
        byte[] expected = new byte[2 * 1024 * 1024];
        for (int i = 0; i < expected.length; i++) {
            expected[i] = (byte) (i % 2 == 0 ? 0xff : 0xfe);
        }
        assertThat(value.body()).isEqualTo(expected);

        assertError(sidecar.get("/api/outboxes/orders/parked/" + tombstone + "/value", bearer()), 404,
                "parked record " + tombstone + " of outbox 'orders' is a tombstone: it has no value");
        assertThat(json(sidecar.get("/api/outboxes/orders/parked/" + tombstone, bearer())).get("tombstone").asBoolean())
                .isTrue();

        HttpResponse<String> page = sidecar.get("/console/outboxes/orders/parked/" + id, basic(OPERATOR_PASSWORD));
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body().length()).as("the console's page, not 6 M hex digits").isLessThan(20_000);
        assertThat(page.body()).contains("2,097,152 bytes, as hex; the first 4,096 shown,"
                        + " <b id='payload-hidden'>2,093,056 bytes hidden</b>")
                .contains("<a id='download' href='/api/outboxes/orders/parked/" + id + "/value'>");
    }

    private static void awaitParked(String where, long n) {
        Await.untilOrFail(() -> parkedCount(where) == n, Duration.ofSeconds(60),
                () -> n + " parked where " + where + "; log:\n" + sidecar.log());
    }

    private static long parkedCount(String where) {
        return Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked WHERE " + where);
    }

    private static void assertError(HttpResponse<String> r, int status, String message) {
        assertThat(message(r, status)).isEqualTo(message);
    }

    /** The JSON error's message, after checking its status and shape. */
    private static String message(HttpResponse<String> r, int status) {
        String what = r.request().method() + " " + r.request().uri() + " -> " + r.statusCode() + " " + r.body();
        assertThat(r.statusCode()).as(what).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).as(what).startsWith("application/json");
        JsonNode body = json(r);
        assertThat(body.get("status").asInt()).as(what).isEqualTo(status);
        assertThat(body.get("error").asString()).as(what).isNotBlank();
        assertThat(body.get("path").asString()).as(what).isEqualTo(r.request().uri().getPath());
        return body.get("message").asString();
    }

    private static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    private static Map<String, String> basic(String password) {
        return Map.of("Authorization", "Basic " + Base64.getEncoder().encodeToString(("operator:" + password)
                .getBytes(StandardCharsets.UTF_8)));
    }

    private static Map<String, String> bearer() {
        return Map.of("Authorization", "Bearer " + TOKEN);
    }

    /** The first {@code n} values of the topic's one partition. */
    private static List<String> read(String topic, int n) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers()), new StringDeserializer(), new StringDeserializer())) {
            TopicPartition p = new TopicPartition(topic, 0);
            c.assign(List.of(p));
            c.seekToBeginning(List.of(p));
            Await.untilOrFail(() -> {
                c.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                return values.size() >= n;
            }, Duration.ofSeconds(60), () -> n + " records on " + topic + ", read " + values);
        }
        return values;
    }
}
