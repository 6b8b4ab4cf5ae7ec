package dev.outbox.sidecar;

import dev.outbox.testkit.Await;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A team without the JVM creates the outbox from the sidecar's printed DDL with its database's own client: a fresh
 * database with no outbox objects, {@code java -jar outbox-sidecar.jar schema} printed, applied by {@code psql} /
 * {@code mysql} alone (never JDBC), a row inserted by that client, and the sidecar — which creates nothing itself —
 * starts and publishes it. The clients are Debian's {@code postgresql-client} and {@code mariadb-client} (whose
 * {@code mysql} speaks to MySQL 8 too); {@code .ci/run} installs them.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class SidecarSchemaTest {
    private static final String PASSWORD = "Schema-Pa55-never-logged";
    private static KafkaServer kafka;

    @TempDir
    Path dir;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    @Test
    void thePrintedPostgresDdlAppliedByPsqlAloneLetsTheSidecarPublish() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_schema");
        postgres.createUser("sidecar_schema", PASSWORD);
        String topic = "schema-pg-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);

        Path ddl = printSchema(url, "sidecar_schema");
        assertThat(Files.readString(ddl)).contains("CREATE OR REPLACE FUNCTION").contains("outbox_uuidv7")
                .contains("_notify");

        URI u = URI.create(url.substring("jdbc:".length()));
        Map<String, String> env = Map.of("PGHOST", u.getHost(), "PGPORT", String.valueOf(u.getPort()),
                "PGDATABASE", u.getPath().substring(1), "PGUSER", "sidecar_schema", "PGPASSWORD", PASSWORD);
        client(List.of("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", ddl.toString()), env);
        client(List.of("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "INSERT INTO outbox (topic, key, value)"
                + " VALUES ('" + topic + "', 'k1', convert_to('from psql', 'UTF8'))"), env);

        assertPublished(url, "sidecar_schema", topic, "k1", "from psql");
    }

    @Test
    void thePrintedMySqlDdlAppliedByTheMySqlClientAloneLetsTheSidecarPublish() throws Exception {
        JdbcServer mysql = TestServers.mysql();
        String url = mysql.createDatabase("sidecar_schema");
        // MySQL 8's default authentication (caching_sha2_password) needs TLS or the server's RSA key on its first
        // login, which Debian's client (MariaDB's) does not fetch: this user logs in the older way.
        try (var c = mysql.dataSource(url).getConnection(); var s = c.createStatement()) {
            s.execute("CREATE USER IF NOT EXISTS 'sidecar_schema'@'%' IDENTIFIED WITH mysql_native_password BY '"
                    + PASSWORD + "'");
            s.execute("GRANT ALL PRIVILEGES ON sidecar_schema.* TO 'sidecar_schema'@'%'");
        }
        String topic = "schema-mysql-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);

        Path ddl = printSchema(url, "sidecar_schema");
        assertThat(Files.readString(ddl)).contains("CREATE TABLE IF NOT EXISTS");

        URI u = URI.create(url.substring("jdbc:".length()));
        List<String> mysqlClient = List.of("mysql", "--protocol=TCP", "-h", u.getHost(), "-P",
                String.valueOf(u.getPort()), "-u", "sidecar_schema", u.getPath().substring(1));
        Map<String, String> env = Map.of("MYSQL_PWD", PASSWORD);
        List<String> apply = new ArrayList<>(mysqlClient);
        apply.addAll(List.of("-e", "source " + ddl));
        client(apply, env);
        List<String> insert = new ArrayList<>(mysqlClient);
        insert.addAll(List.of("-e", "INSERT INTO outbox (topic, `key`, value) VALUES ('" + topic
                + "', 'k1', 'from mysql')"));
        client(insert, env);

        assertPublished(url, "sidecar_schema", topic, "k1", "from mysql");
    }

    @Test
    void initWithoutTheRightToCreateTablesSaysSoAndWhatToDo() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_schema_norights");
        try (var c = postgres.dataSource(url).getConnection(); var s = c.createStatement()) {
            s.execute("DROP ROLE IF EXISTS sidecar_norights");
            s.execute("CREATE ROLE sidecar_norights LOGIN PASSWORD '" + PASSWORD + "'"); // no superuser
            s.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC");
            s.execute("REVOKE ALL ON SCHEMA public FROM sidecar_norights");
            s.execute("GRANT USAGE ON SCHEMA public TO sidecar_norights");
        }
        Path config = config(url, "sidecar_norights", "127.0.0.1:9");
        Path out = dir.resolve("init.out");
        Path err = dir.resolve("init.err");

        int status = SidecarProcess.command(List.of("init", "--config", config.toString()), out, err,
                Map.of("SCHEMA_DB_PASSWORD", PASSWORD), Duration.ofSeconds(90));

        String error = Files.readString(err);
        assertThat(status).as("exit status; stderr:\n%s", error).isEqualTo(SchemaCommand.INIT_FAILED_EXIT);
        assertThat(error).contains("init of outbox 'orders' failed: the user 'sidecar_norights' may not create")
                .contains("outbox-sidecar.jar schema --config").doesNotContain(PASSWORD);
    }

    /** Runs {@code schema} for a configuration over {@code url}; returns the file holding what it printed. */
    private Path printSchema(String url, String user) throws IOException {
        Path config = config(url, user, kafka.bootstrapServers());
        Path ddl = dir.resolve("outbox.sql");
        Path err = dir.resolve("schema.err");
        int status = SidecarProcess.command(List.of("schema", "--config", config.toString()), ddl, err,
                Map.of("SCHEMA_DB_PASSWORD", PASSWORD), Duration.ofSeconds(90));
        assertThat(status).as("schema's exit status; stderr:\n%s", Files.readString(err)).isZero();
        assertThat(Files.readString(ddl)).doesNotContain(PASSWORD);
        return ddl;
    }

    private Path config(String url, String user, String bootstrap) throws IOException {
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
                        password: ${SCHEMA_DB_PASSWORD}
                      kafka:
                        leader-topic: schema-%s-leader
                """.formatted(SidecarProcess.freePort(), bootstrap, url, user, UUID.randomUUID()));
        return config;
    }

    /** Runs a database client to its end; fails with its output unless it exits with 0. */
    private void client(List<String> command, Map<String, String> env) throws Exception {
        Path out = dir.resolve("client.out");
        ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile());
        b.environment().putAll(env);
        Process p;
        try {
            p = b.start();
        } catch (IOException e) {
            throw new AssertionError(command.get(0) + " is not installed: .ci/run installs postgresql-client and"
                    + " mariadb-client (apt-get install postgresql-client mariadb-client)", e);
        }
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", command.get(0)).isTrue();
        assertThat(p.exitValue()).as("%s's exit status; output:\n%s", command, Files.readString(out)).isZero();
    }

    /** Starts the sidecar (it creates nothing: store.create-schema is off by default) and reads the row back. */
    private void assertPublished(String url, String user, String topic, String key, String value) throws Exception {
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("run.yaml");
        Files.writeString(config, Files.readString(config(url, user, kafka.bootstrapServers()))
                .replaceFirst("port: \\d+", "port: " + port));
        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("SCHEMA_DB_PASSWORD", PASSWORD));
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                     ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                     ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                     new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            consumer.seekToBeginning(consumer.assignment());
            Map<String, String> got = new HashMap<>();
            Await.untilOrFail(() -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    got.put(r.key(), r.value());
                }
                return got.containsKey(key);
            }, Duration.ofSeconds(90), () -> "the row published; sidecar log:\n" + sidecar.log());
            assertThat(got).containsEntry(key, value);
            assertThat(sidecar.log()).doesNotContain(PASSWORD);
        }
    }
}
