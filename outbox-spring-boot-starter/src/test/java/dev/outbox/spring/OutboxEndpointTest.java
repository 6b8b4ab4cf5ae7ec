package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code outbox} Actuator endpoint over HTTP on a real Postgres and Kafka, secured by the Spring Security
 * configuration the Spring page documents ({@link Security}): it lists parked records with filters and pages,
 * refuses a write without authentication (401) or without the operator role (403), and replays and discards a
 * parked record for an operator.
 */
@SpringBootTest(classes = {TestApplication.class, OutboxEndpointTest.Security.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class OutboxEndpointTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final KafkaServer KAFKA = TestServers.kafka();
    /** Not created until the replay: records sent to it are parked ("topic ... does not exist"). */
    private static final String TOPIC = "endpoint-" + UUID.randomUUID();
    private static final String PARKED = "/actuator/outbox/outbox/parked";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @LocalServerPort
    int port;
    @Autowired
    OutboxPublisher publisher;
    @Autowired
    TransactionTemplate transactions;

    private final HttpClient http = HttpClient.newHttpClient();

    /** The documented configuration: health open, outbox reads for viewers and operators, writes for operators. */
    @Configuration(proxyBeanMethods = false)
    static class Security {
        @Bean
        SecurityFilterChain managementSecurity(HttpSecurity http) throws Exception {
            http.securityMatcher(EndpointRequest.toAnyEndpoint())
                    .authorizeHttpRequests(requests -> requests
                            .requestMatchers(EndpointRequest.to("health")).permitAll()
                            .requestMatchers(EndpointRequest.to("outbox").withHttpMethod(HttpMethod.GET))
                            .hasAnyRole("OUTBOX_VIEWER", "OUTBOX_OPERATOR")
                            .anyRequest().hasRole("OUTBOX_OPERATOR"))
                    .httpBasic(Customizer.withDefaults())
                    // Actuator's write operations take JSON bodies only, which a cross-site form cannot send.
                    .csrf(csrf -> csrf.ignoringRequestMatchers(EndpointRequest.toAnyEndpoint()));
            return http.build();
        }

        @Bean
        InMemoryUserDetailsManager users() {
            return new InMemoryUserDetailsManager(
                    User.withUsername("operator").password("{noop}operator-secret").roles("OUTBOX_OPERATOR").build(),
                    User.withUsername("viewer").password("{noop}viewer-secret").roles("OUTBOX_VIEWER").build());
        }
    }

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_endpoint");
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("spring.flyway.enabled", () -> "true");
        registry.add("spring.flyway.locations", () -> "classpath:db/migration,classpath:dev/outbox/migrations/postgresql");
        registry.add("outbox.dispatcher.leader-election", () -> "false");
        registry.add("management.endpoints.web.exposure.include", () -> "health,outbox");
        registry.add("spring.web.error.include-message", () -> "always");
    }

    @Test
    void listsReplaysAndDiscardsAParkedRecordAndRefusesUnauthenticatedWrites() throws Exception {
        transactions.executeWithoutResult(s -> {
            publisher.publish(TOPIC, "k1", "first");
            publisher.publish(TOPIC, "k2", "second");
        });
        Await.untilOrFail(() -> get(PARKED + "?topic=" + TOPIC, "viewer").path("total").asLong() == 2, TIMEOUT,
                () -> "two parked records: " + get(PARKED + "?topic=" + TOPIC, "viewer"));

        // Paged, one at a time, by ascending id; and filtered by key.
        JsonNode first = get(PARKED + "?topic=" + TOPIC + "&limit=1", "viewer");
        assertThat(first.path("records")).hasSize(1);
        assertThat(first.path("records").get(0).path("key").asString()).isEqualTo("k1");
        assertThat(first.path("records").get(0).path("reason").asString()).isNotBlank();
        long id1 = first.path("records").get(0).path("id").asLong();
        assertThat(first.path("nextAfter").asLong()).isEqualTo(id1);
        JsonNode second = get(PARKED + "?topic=" + TOPIC + "&limit=1&after=" + id1, "viewer");
        assertThat(second.path("records").get(0).path("key").asString()).isEqualTo("k2");
        long id2 = second.path("records").get(0).path("id").asLong();
        JsonNode last = get(PARKED + "?topic=" + TOPIC + "&limit=1&after=" + id2, "viewer");
        assertThat(last.path("records")).isEmpty();
        assertThat(last.path("nextAfter").isNull()).isTrue();
        JsonNode byKey = get(PARKED + "?topic=" + TOPIC + "&key=k2", "viewer");
        assertThat(byKey.path("total").asLong()).isEqualTo(1);
        assertThat(byKey.path("records").get(0).path("id").asLong()).isEqualTo(id2);

        // Writes: refused without authentication, and for a viewer; nothing changes.
        String replayFirst = "{\"ids\": \"" + id1 + "\"}";
        assertThat(post("/actuator/outbox/outbox/replay", replayFirst, null).statusCode()).isEqualTo(401);
        assertThat(post("/actuator/outbox/outbox/replay", replayFirst, "viewer").statusCode()).isEqualTo(403);
        assertThat(post("/actuator/outbox/outbox/discard", replayFirst, null).statusCode()).isEqualTo(401);
        assertThat(get(PARKED + "?topic=" + TOPIC, "viewer").path("total").asLong()).isEqualTo(2);

        // The operator replays the first (its topic now exists) and discards the second.
        KAFKA.createTopic(TOPIC, 1);
        HttpResponse<String> replayed = post("/actuator/outbox/outbox/replay", replayFirst, "operator");
        assertThat(replayed.statusCode()).as(replayed.body()).isEqualTo(200);
        assertThat(JSON.readTree(replayed.body()).path("affected").asInt()).isEqualTo(1);
        try (TopicReader reader = new TopicReader(KAFKA.bootstrapServers(), TOPIC)) {
            assertThat(reader.readUntil(r -> !r.isEmpty(), TIMEOUT).get(0).key()).isEqualTo("k1");
        }
        HttpResponse<String> discarded = post("/actuator/outbox/outbox/discard", "{\"ids\": \"" + id2 + "\"}",
                "operator");
        assertThat(discarded.statusCode()).as(discarded.body()).isEqualTo(200);
        assertThat(JSON.readTree(discarded.body()).path("affected").asInt()).isEqualTo(1);
        assertThat(get(PARKED + "?topic=" + TOPIC, "viewer").path("total").asLong()).isZero();
    }

    @Test
    void showsEachOutboxsStatusBacklogAndLag() {
        Await.untilOrFail(() -> "LEADER".equals(get("/actuator/outbox", "viewer").path("outboxes").path("outbox")
                .path("status").asString()), TIMEOUT, () -> "leader: " + get("/actuator/outbox", "viewer"));
        JsonNode outbox = get("/actuator/outbox/outbox", "viewer");
        assertThat(outbox.path("status").asString()).isEqualTo("LEADER");
        assertThat(outbox.path("leaderId").asString()).isNotBlank();
        assertThat(outbox.path("backlog").isNumber()).as(outbox.toString()).isTrue();
        assertThat(outbox.path("parked").isNumber()).as(outbox.toString()).isTrue();
        assertThat(outbox.path("lag").asString()).startsWith("PT");
    }

    @Test
    void badRequestsAreRefusedNamingTheParameter() throws Exception {
        assertThat(error(PARKED + "?limit=0")).contains("limit must be between 1 and 500: 0");
        assertThat(error(PARKED + "?parkedFrom=yesterday"))
                .contains("parkedFrom must be an instant in UTC such as 2025-01-31T12:00:00Z: 'yesterday'");
        assertThat(error(PARKED + "?messageId=nope")).contains("messageId must be a message id");
        assertThat(status("/actuator/outbox/nope")).isEqualTo(404);
        assertThat(status("/actuator/outbox/nope/parked")).isEqualTo(404);
        assertThat(status("/actuator/outbox/outbox/elsewhere")).isEqualTo(400);
        assertThat(post("/actuator/outbox/outbox/replay", "{\"ids\": \"1,x\"}", "operator").statusCode())
                .isEqualTo(400);
        assertThat(post("/actuator/outbox/outbox/replay", "{\"ids\": \"\"}", "operator").statusCode()).isEqualTo(400);
        assertThat(post("/actuator/outbox/outbox/resend", "{\"ids\": \"1\"}", "operator").statusCode())
                .isEqualTo(400);
    }

    private JsonNode get(String path, String user) {
        try {
            HttpResponse<String> r = http.send(request(path, user).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(path + ": " + r.body()).isEqualTo(200);
            return JSON.readTree(r.body());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The body of a 400 answer ({@code spring.web.error.include-message=always} shows the reason). */
    private String error(String path) throws Exception {
        HttpResponse<String> r = http.send(request(path, "viewer").GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path + ": " + r.body()).isEqualTo(400);
        return r.body();
    }

    private int status(String path) throws Exception {
        return http.send(request(path, "viewer").GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    private HttpResponse<String> post(String path, String json, String user) throws Exception {
        return http.send(request(path, user).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpRequest.Builder request(String path, String user) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30));
        if (user != null) {
            String credentials = user + ":" + user + "-secret";
            b.header("Authorization", "Basic "
                    + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        }
        return b;
    }
}
