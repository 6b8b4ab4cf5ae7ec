package dev.outbox.sidecar;

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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.sql.DataSource;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The delivery options per outbox in the sidecar's configuration ({@code store.scheduling},
 * {@code store.idempotency.retention}), for writers in other languages: {@code schema} prints the option tables,
 * {@code psql} applies them, a row written by plain SQL into {@code outbox_scheduled} (as docs/delivery-options.md
 * tells a non-JVM writer to) is published once due — not before, and once — by the sidecar's dispatcher.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class SidecarDeliveryOptionsTest {
    private static final String PASSWORD = "Options-Pa55-never-logged";

    @TempDir
    Path dir;

    @Test
    void aRowScheduledByPlainSqlIsPublishedOnceDue() throws Exception {
        KafkaServer kafka = TestServers.kafka();
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_options");
        postgres.createUser("sidecar_options", PASSWORD);
        String topic = "options-pg-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
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
                        username: sidecar_options
                        password: ${OPTIONS_DB_PASSWORD}
                      store:
                        scheduling: true
                        idempotency:
                          retention: 7d
                          on-duplicate: skip
                      dispatcher:
                        poll-interval: 200ms
                      kafka:
                        leader-topic: options-%s-leader
                """.formatted(port, kafka.bootstrapServers(), url, UUID.randomUUID()));

        Path ddl = dir.resolve("outbox.sql");
        Path err = dir.resolve("schema.err");
        int status = SidecarProcess.command(List.of("schema", "--config", config.toString()), ddl, err,
                Map.of("OPTIONS_DB_PASSWORD", PASSWORD), Duration.ofSeconds(90));
        assertThat(status).as("schema's exit status; stderr:\n%s", Files.readString(err)).isZero();
        assertThat(Files.readString(ddl)).contains("CREATE TABLE IF NOT EXISTS \"outbox_scheduled\"")
                .contains("CREATE TABLE IF NOT EXISTS \"outbox_idempotency\"");
        psql(url, "-f", ddl.toString());
        DataSource db = postgres.dataSource(url);

        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("OPTIONS_DB_PASSWORD", PASSWORD));
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                     ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                     new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            consumer.seekToBeginning(consumer.assignment());
            // the sidecar runs; a writer in another language: the message into the scheduled table, due in 3 s on
            // the database's clock
            psql(url, "-c", "INSERT INTO outbox_scheduled (topic, key, value, due_at) VALUES ('" + topic + "', 'k1',"
                    + " convert_to('due later', 'UTF8'), now() + interval '3 seconds')");
            Instant due = instant(db, "SELECT due_at FROM outbox_scheduled");
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Await.untilOrFail(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
                return got.stream().anyMatch(r -> r.key().equals("k1"));
            }, Duration.ofSeconds(90), () -> "the scheduled row published; sidecar log:\n" + sidecar.log());
            // the producer's timestamp, on this machine's clock (the embedded database's too)
            assertThat(Instant.ofEpochMilli(got.get(0).timestamp())).as("sent at; due at " + due)
                    .isAfterOrEqualTo(due.minusMillis(1));
            assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_scheduled")).as("moved").isZero();

            // once: a row written after it, straight into the outbox, comes next
            psql(url, "-c", "INSERT INTO outbox (topic, key, value) VALUES ('" + topic + "', 'k2',"
                    + " convert_to('after', 'UTF8'))");
            Await.untilOrFail(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
                return got.stream().anyMatch(r -> r.key().equals("k2"));
            }, Duration.ofSeconds(60), () -> "the later row published; sidecar log:\n" + sidecar.log());
            assertThat(got).extracting(ConsumerRecord::value).containsExactly("due later", "after");
            assertThat(sidecar.log()).doesNotContain(PASSWORD);
        }
    }

    private static Instant instant(DataSource db, String sql) throws Exception {
        try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            assertThat(rs.next()).as(sql).isTrue();
            return rs.getTimestamp(1).toInstant();
        }
    }

    /** Runs psql as the sidecar's user with {@code args}; fails with its output unless it exits with 0. */
    private void psql(String url, String... args) throws Exception {
        URI u = URI.create(url.substring("jdbc:".length()));
        List<String> command = new ArrayList<>(List.of("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"));
        command.addAll(List.of(args));
        Path out = dir.resolve("psql.out");
        ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile());
        b.environment().putAll(Map.of("PGHOST", u.getHost(), "PGPORT", String.valueOf(u.getPort()),
                "PGDATABASE", u.getPath().substring(1), "PGUSER", "sidecar_options", "PGPASSWORD", PASSWORD));
        Process p;
        try {
            p = b.start();
        } catch (IOException e) {
            throw new AssertionError("psql is not installed: .ci/run installs postgresql-client", e);
        }
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("psql finished").isTrue();
        assertThat(p.exitValue()).as("%s's exit status; output:\n%s", command, Files.readString(out)).isZero();
    }
}
