package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code outbox} endpoint with Spring Security on the class path and no security configuration of the
 * application's own: Spring Boot's default one refuses its reads and writes without authentication.
 */
@SpringBootTest(classes = TestApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class OutboxEndpointDefaultSecurityTest {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @LocalServerPort
    int port;

    private final HttpClient http = HttpClient.newHttpClient();

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_endpoint_default_security");
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("spring.flyway.enabled", () -> "true");
        registry.add("spring.flyway.locations", () -> "classpath:db/migration,classpath:dev/outbox/migrations/postgresql");
        registry.add("outbox.dispatcher.enabled", () -> "false");
        registry.add("management.endpoints.web.exposure.include", () -> "outbox");
    }

    @Test
    void anUnauthenticatedReadOrWriteIsRefused() throws Exception {
        HttpResponse<String> write = http.send(request("/actuator/outbox/outbox/discard")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"ids\": \"1\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(write.statusCode()).as(write.body()).isEqualTo(401);
        HttpResponse<String> read = http.send(request("/actuator/outbox").GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(read.statusCode()).as(read.body()).isEqualTo(401);
    }

    private HttpRequest.Builder request(String path) {
        // As an API client asks: JSON, not a login page.
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
                .header("Accept", "application/json");
    }
}
