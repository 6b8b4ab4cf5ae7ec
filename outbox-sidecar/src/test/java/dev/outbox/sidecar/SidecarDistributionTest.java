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
 * The distribution archive the build packages ({@code outbox-sidecar-distribution.tar.gz}), as an operator uses it:
 * unpacked with {@code tar}, it holds the launcher, the jar, an example configuration, the systemd unit, the
 * Kubernetes example, the Dockerfile, the dashboard and alert rules and the DDL; the launcher prints the DDL and
 * starts the sidecar against real servers, which reports UP and exits 0 on SIGTERM.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SidecarDistributionTest {
    private static final String PASSWORD = "Dist-Pa55-never-logged";

    @TempDir
    Path dir;

    @Test
    void theUnpackedDistributionsLauncherRunsTheSidecar() throws Exception {
        Path archive = Path.of(System.getProperty("outbox.sidecar.distribution", "missing"));
        assertThat(archive).as("the distribution archive (system property outbox.sidecar.distribution)")
                .isRegularFile();
        Process tar = new ProcessBuilder("tar", "-xzf", archive.toString(), "-C", dir.toString()).inheritIO().start();
        assertThat(tar.waitFor(60, TimeUnit.SECONDS) && tar.exitValue() == 0).as("tar -xzf").isTrue();
        Path home;
        try (var entries = Files.list(dir)) {
            home = entries.filter(p -> p.getFileName().toString().startsWith("outbox-sidecar-")).findFirst()
                    .orElseThrow();
        }
        for (String file : List.of("bin/outbox-sidecar", "lib/outbox-sidecar.jar", "config/outbox.yaml.example",
                "systemd/outbox-sidecar.service", "kubernetes/outbox-sidecar.yaml", "Dockerfile", "README.txt",
                "monitoring/grafana-dashboard.json", "monitoring/prometheus-alerts.yml", "ddl/postgres.sql",
                "ddl/mysql.sql")) {
            assertThat(home.resolve(file)).as(file).isRegularFile();
        }
        assertThat(Files.isExecutable(home.resolve("bin/outbox-sidecar"))).as("the launcher is executable").isTrue();
        assertThat(Files.readString(home.resolve("ddl/postgres.sql"))).contains("outbox_uuidv7").contains("_notify");
        assertThat(Files.readString(home.resolve("README.txt"))).doesNotContain("${project.version}");

        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String url = postgres.createDatabase("sidecar_dist");
        postgres.createUser("sidecar_dist", PASSWORD);
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, Files.readString(home.resolve("config/outbox.yaml.example"))
                .replace("port: 8080", "port: " + port)
                .replace("port: 9090", "port: " + SidecarProcess.freePort())
                .replace("address: 0.0.0.0", "address: 127.0.0.1")
                .replace("kafka-1:9092,kafka-2:9092", kafka.bootstrapServers())
                .replace("jdbc:postgresql://db:5432/shop", url)
                .replace("username: outbox", "username: sidecar_dist")
                .replace("table: outbox", "table: outbox\n        create-schema: true")
                .replace("shop-orders-outbox-leader", "sidecar-dist-leader"));
        Map<String, String> env = Map.of("ORDERS_DB_PASSWORD", PASSWORD, "OUTBOX_OPERATOR_PASSWORD",
                "operator-password-of-16+", "JAVA_HOME", System.getProperty("java.home"));

        Path ddl = dir.resolve("outbox.sql");
        int status = SidecarProcess.run(List.of(home.resolve("bin/outbox-sidecar").toString(), "schema", "--config",
                config.toString()), ddl, dir.resolve("schema.err"), env, Duration.ofSeconds(90));
        assertThat(status).as("bin/outbox-sidecar schema; stderr:\n%s", Files.readString(dir.resolve("schema.err")))
                .isZero();
        assertThat(Files.readString(ddl)).contains("CREATE TABLE IF NOT EXISTS");

        try (SidecarProcess sidecar = SidecarProcess.startCommand(List.of(home.resolve("bin/outbox-sidecar").toString(),
                "--config", config.toString()), dir.resolve("sidecar.log"), port, env)) {
            sidecar.awaitLog("Harvesting 1 outbox(es)", Duration.ofSeconds(90));
            sidecar.terminate();
            assertThat(sidecar.awaitExit(Duration.ofSeconds(60))).as("exit status after SIGTERM; log:\n%s",
                    sidecar.log()).isZero();
            assertThat(sidecar.log()).doesNotContain(PASSWORD);
        }
    }
}
