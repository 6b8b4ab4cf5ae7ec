package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A normal close is quiet: three times, the real jar on Postgres (commit notifications on, the default) is stopped
 * with SIGTERM once ready, exits 0, and logs nothing at WARN or above and no stack trace while it closes. (The
 * commit listener's connection used to be aborted by the pool's close in most shutdowns: Hikari's WARN with a
 * stack trace.)
 */
class SidecarShutdownTest {

    @Test
    void sigtermClosesWithoutAWarningOrAStackTraceThreeTimesInARow() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-shutdown"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_shutdown");
        PostgresStore.builder(postgres.dataSource(url)).build().createSchema();
        KafkaServer kafka = TestServers.kafka();
        for (int round = 0; round < 3; round++) {
            int port = SidecarProcess.freePort();
            Path config = dir.resolve("outbox.yaml");
            Files.writeString(config, """
                    sidecar:
                      http:
                        port: %d
                      kafka:
                        bootstrap-servers: %s
                      outboxes:
                        orders:
                          datasource:
                            url: %s
                            username: %s
                            password: ${SHUTDOWN_DB_PASSWORD}
                          dispatcher:
                            leader-election: false
                    """.formatted(port, kafka.bootstrapServers(), url, postgres.username()));
            try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar-" + round + ".log"), port,
                    Map.of("SHUTDOWN_DB_PASSWORD", postgres.password()))) {
                sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
                sidecar.terminate();
                assertThat(sidecar.awaitExit(Duration.ofSeconds(60))).as("exit status, round " + round).isZero();
                String log = sidecar.log();
                assertThat(log).contains("Every outbox dispatcher is closed");
                String closing = log.substring(log.indexOf("Closing 1 outbox dispatcher(s)"));
                assertThat(closing).as("the log from the close on, round " + round).doesNotContain(" WARN ")
                        .doesNotContain(" ERROR ").doesNotContain("\tat ").doesNotContain("Exception");
            }
        }
    }
}
