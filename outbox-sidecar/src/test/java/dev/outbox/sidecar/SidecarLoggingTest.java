package dev.outbox.sidecar;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Logging set from the configuration file: {@code sidecar.logging.format: ecs} makes every line Spring Boot writes a
 * JSON object (Elastic Common Schema; the lines before Spring starts stay plain text), and {@code sidecar.logging.level} sets levels by logger name.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SidecarLoggingTest {
    private static final String PASSWORD = "Logging-Pa55-never-logged";

    @TempDir
    Path dir;

    @Test
    void structuredJsonLinesAndLevelsFromTheConfigurationFile() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String url = postgres.createDatabase("sidecar_logging");
        postgres.createUser("sidecar_logging", PASSWORD);
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  logging:
                    format: ecs
                    level:
                      org.springframework.security: debug
                      dev.outbox.internal: warn
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: sidecar_logging
                        password: ${LOGGING_DB_PASSWORD}
                      store:
                        create-schema: true
                      kafka:
                        leader-topic: sidecar-logging-leader
                """.formatted(port, kafka.bootstrapServers(), url));

        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("LOGGING_DB_PASSWORD", PASSWORD))) {
            sidecar.awaitHttp("/actuator/health", "UP", Duration.ofSeconds(90));
            sidecar.awaitLog("\"level\":\"DEBUG\"", Duration.ofSeconds(30));
            List<String> json = sidecar.log().lines().filter(l -> l.startsWith("{")).toList();
            assertThat(json).as("JSON lines once Spring started").isNotEmpty()
                    .allSatisfy(l -> assertThat(l).endsWith("}").contains("\"@timestamp\"").contains("\"message\""));
            assertThat(json).as("a DEBUG line of org.springframework.security (the health request's)")
                    .anyMatch(l -> l.contains("\"level\":\"DEBUG\"")
                            && l.contains("\"logger\":\"org.springframework.security"));
            assertThat(sidecar.log()).doesNotContain(PASSWORD);
        }
    }
}
