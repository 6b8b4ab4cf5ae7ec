package dev.outbox.sidecar;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each bad configuration of the issue's list stops the real jar with exit status 2 and one line naming the key and
 * its value; the database password never appears.
 */
class SidecarConfigErrorsTest {
    private static final String PASSWORD = "Errors-Pa55-never-logged";
    private static String url;

    @TempDir
    Path dir;

    @BeforeAll
    static void database() {
        JdbcServer postgres = TestServers.postgres();
        url = postgres.createDatabase("sidecar_errors");
        postgres.createUser("sidecar_errors", PASSWORD);
    }

    /** A valid configuration with {@code outbox} (indented lines under the outbox "orders") and Kafka at {@code kafka}. */
    private static String config(String outbox, String kafka) {
        return """
                sidecar:
                  kafka:
                    bootstrap-servers: %s
                    startup-timeout: 3s
                  outboxes:
                    orders:
                %s
                """.formatted(kafka, outbox.indent(6).stripTrailing());
    }

    private static String datasource() {
        return """
                datasource:
                  url: %s
                  username: sidecar_errors
                  password: ${ERRORS_DB_PASSWORD}
                """.formatted(url);
    }

    /**
     * Runs the jar on {@code yaml}; asserts exit status 2, and an error of one line, the last, after nothing but INFO
     * lines; returns the error line.
     */
    private String fails(String yaml) throws IOException {
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, yaml);
        Path log = dir.resolve("sidecar.log");
        int status = SidecarProcess.runToExit(config, log, Map.of("ERRORS_DB_PASSWORD", PASSWORD),
                Duration.ofSeconds(90));
        String output = Files.readString(log).strip();
        assertThat(status).as("exit status; output:\n%s", output).isEqualTo(SidecarApplication.CONFIG_ERROR_EXIT);
        assertThat(output).doesNotContain(PASSWORD).doesNotContain("\tat ");
        List<String> lines = output.lines().toList();
        String error = lines.get(lines.size() - 1);
        assertThat(error).startsWith("outbox-sidecar: configuration error: ");
        assertThat(lines.subList(0, lines.size() - 1)).as("before the error line").allMatch(l -> l.contains(" INFO "));
        return error;
    }

    @Test
    void anUnknownKeyIsNamedWithTheNearestKnownOne() throws IOException {
        String line = fails(config(datasource() + "dispatcher:\n  mark-batch-sise: 50\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.mark-batch-sise = '50': unknown key")
                .contains("did you mean 'sidecar.outboxes.orders.dispatcher.mark-batch-size'?");
    }

    @Test
    void anUnknownTopLevelKeyIsNamed() throws IOException {
        String line = fails(config(datasource(), "127.0.0.1:9") + "sidecr:\n  http:\n    port: 1\n");

        assertThat(line).contains("sidecr.http.port = '1': unknown key (did you mean 'sidecar.http.port'?)");
    }

    @Test
    void aShardCountThatIsNotTheTablesIsNamedWithBothCounts() throws IOException {
        JdbcServer postgres = TestServers.postgres();
        dev.outbox.store.postgres.PostgresStore.builder(postgres.dataSource(url)).table("unsharded_outbox").build()
                .createSchema();

        String line = fails(config(datasource() + "store:\n  table: unsharded_outbox\n  shards: 4\n",
                "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.store.shards = '4'")
                .contains("made for 1 shard(s)").contains("configured with 4 shard(s)");
    }

    @Test
    void aMissingDatasourceIsNamed() throws IOException {
        String line = fails(config("topic-prefix: x.\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.datasource.url = (not set)");
    }

    @Test
    void aBadDurationIsNamedWithItsValue() throws IOException {
        String line = fails(config(datasource() + "dispatcher:\n  poll-interval: 5 parsecs\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.poll-interval = '5 parsecs': not a duration");
    }

    @Test
    void aBadDataSizeIsNamedWithItsValue() throws IOException {
        String line = fails(config(datasource() + "dispatcher:\n  max-in-flight-bytes: 64 parsecs\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.max-in-flight-bytes = '64 parsecs':"
                + " not a data size");
    }

    @Test
    void anUnknownLeaderElectionIsNamedWithItsValueAndTheChoices() throws IOException {
        String line = fails(config(datasource() + "dispatcher:\n  leader-election: zookeeper\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.leader-election = 'zookeeper'")
                .contains("it takes kafka, database or none");
    }

    @Test
    void aBadTableNameIsNamedWithItsValue() throws IOException {
        String line = fails(config(datasource() + "store:\n  table: Orders-Table\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.store.table = 'Orders-Table'");
    }

    @Test
    void anUnreachableKafkaIsNamed() throws IOException {
        String kafka = "127.0.0.1:" + SidecarProcess.freePort();
        String line = fails(config(datasource(), kafka));

        assertThat(line).contains("sidecar.kafka.bootstrap-servers = '" + kafka + "': Kafka did not answer");
    }

    @Test
    void aPasswordInTheJdbcUrlIsMaskedInTheErrorLine() throws IOException {
        String withPassword = """
                datasource:
                  url: %s?user=sidecar_errors&password=%s
                store:
                  table: Orders-Table
                """.formatted(url, PASSWORD);

        String line = fails(config(withPassword, "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.store.table = 'Orders-Table'");
    }

    @Test
    void aPasswordInTheUrlOfADatabaseThatCannotBeReachedIsMasked() throws IOException {
        String unreachable = "jdbc:postgresql://127.0.0.1:" + SidecarProcess.freePort() + "/nowhere?password=" + PASSWORD;
        String line = fails(config("datasource:\n  url: " + unreachable + "\n  username: sidecar_errors\n",
                "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.datasource.url = '")
                .contains("password=" + Redaction.MASK).contains("cannot connect");
    }

    @Test
    void anUnsetEnvironmentVariableIsNamed() throws IOException {
        String line = fails(config(datasource().replace("${ERRORS_DB_PASSWORD}", "${OUTBOX_NOT_SET_ANYWHERE}"),
                "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.datasource.password = '" + Redaction.MASK + "'")
                .contains("the environment variable OUTBOX_NOT_SET_ANYWHERE is not set");
    }

    @Test
    void aMisspeltChoiceIsNamedWithTheChoicesAndTheNearest() throws IOException {
        String line = fails(config(datasource() + "dispatcher:\n  harvest: cursr\n", "127.0.0.1:9"));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.harvest = 'cursr': not one of ")
                .contains("cursor").contains("(did you mean 'cursor'?)").doesNotContain("No enum constant");
    }

    @Test
    void anInboxWhoseFailedMessagesTableCannotBeReadIsNamed() throws IOException {
        String line = fails(config(datasource(), "127.0.0.1:9") + "  inboxes:\n    billing:\n"
                + datasource().indent(6) + "      table: no_such_inbox\n");

        assertThat(line).contains("sidecar.inboxes.billing.table = 'no_such_inbox': cannot read the failed-messages"
                + " table \"no_such_inbox_failed\" (is it the inbox's table, created, and may 'sidecar_errors' read it?)")
                .contains("does not exist");
    }

    @Test
    void aMisspeltLogLevelIsNamed() throws IOException {
        String line = fails(config(datasource(), "127.0.0.1:9") + "  logging:\n    level:\n      dev.outbox: debgu\n");

        assertThat(line).contains("sidecar.logging.level.dev.outbox = 'debgu': not a level")
                .contains("(did you mean 'debug'?)");
    }

    /** A configuration with RabbitMQ as the broker: {@code rabbit} under sidecar.rabbitmq, {@code outbox} as above. */
    private static String rabbitConfig(String outbox, String rabbit) {
        return """
                sidecar:
                  rabbitmq:
                %s
                  outboxes:
                    orders:
                %s
                """.formatted(rabbit.indent(4).stripTrailing(), outbox.indent(6).stripTrailing());
    }

    /** The test node, by host and port (its user and password are the defaults, guest). */
    private static String realRabbit() {
        java.net.URI uri = TestServers.rabbitMq().uri();
        String[] user = uri.getRawUserInfo().split(":", 2);
        return "host: " + uri.getHost() + "\nport: " + uri.getPort() + "\nusername: " + user[0] + "\npassword: "
                + user[1] + "\n";
    }

    private static String unreachableRabbit() {
        return "host: 127.0.0.1\nport: " + SidecarProcess.freePort() + "\nstartup-timeout: 1s\n";
    }

    @Test
    void anUnknownRabbitMqKeyIsNamedWithTheNearestKnownOne() throws IOException {
        String line = fails(rabbitConfig(datasource(), "host: 127.0.0.1\nvirtual-hots: orders\n"));

        assertThat(line).contains("sidecar.rabbitmq.virtual-hots = 'orders': unknown key (did you mean"
                + " 'sidecar.rabbitmq.virtual-host'?)");
    }

    @Test
    void aRabbitMqConfirmTimeoutOutOfRangeIsNamedWithItsValue() throws IOException {
        String line = fails(rabbitConfig(datasource() + "rabbitmq:\n  confirm-timeout: 5m\n"
                + "dispatcher:\n  leader-election: database\n", realRabbit()));

        assertThat(line).contains("sidecar.outboxes.orders.rabbitmq.confirm-timeout = '5m': confirmTimeout must be"
                + " between 1 ms and 120000 ms, was 300000 ms");
    }

    @Test
    void theDefaultKafkaElectionWithRabbitMqIsNamed() throws IOException {
        String line = fails(rabbitConfig(datasource(), realRabbit()));

        assertThat(line).contains("sidecar.outboxes.orders.dispatcher.leader-election = 'kafka': the default, kafka,"
                + " needs Kafka, and the broker is RabbitMQ (sidecar.rabbitmq): set it to database");
    }

    @Test
    void anUnreachableRabbitMqIsNamedWithoutItsPassword() throws IOException {
        String line = fails(rabbitConfig(datasource() + "dispatcher:\n  leader-election: database\n",
                unreachableRabbit() + "password: " + PASSWORD + "\n"));

        assertThat(line).contains("sidecar.rabbitmq.host = '127.0.0.1': RabbitMQ at guest@127.0.0.1:")
                .contains("did not accept a connection within sidecar.rabbitmq.startup-timeout (1 s)");
    }

    @Test
    void aRefusedRabbitMqLoginNamesThePasswordWithoutShowingIt() throws IOException {
        java.net.URI uri = TestServers.rabbitMq().uri();
        String line = fails(rabbitConfig(datasource() + "dispatcher:\n  leader-election: database\n",
                "host: " + uri.getHost() + "\nport: " + uri.getPort() + "\nusername: nobody-here\npassword: "
                        + PASSWORD + "\n"));

        assertThat(line).contains("sidecar.rabbitmq.password = '" + Redaction.MASK + "': RabbitMQ at nobody-here@")
                .contains("refused the login");
    }

    @Test
    void aUriWithAHostTooIsNamedAndItsPasswordMasked() throws IOException {
        String line = fails(rabbitConfig(datasource() + "dispatcher:\n  leader-election: database\n",
                "uri: amqp://app:" + PASSWORD + "@127.0.0.1:5672/%2F\nhost: 127.0.0.1\n"));

        assertThat(line).contains("sidecar.rabbitmq.host = '127.0.0.1': set either sidecar.rabbitmq.uri or"
                + " sidecar.rabbitmq.host, port and virtual-host, not both");
    }

    @Test
    void kafkaAndRabbitMqTogetherAreNamed() throws IOException {
        String line = fails(config(datasource(), "127.0.0.1:9") + "  rabbitmq:\n    host: 127.0.0.1\n");

        assertThat(line).contains("sidecar.kafka.bootstrap-servers = '127.0.0.1:9': set too, while sidecar.rabbitmq"
                + " is configured: the sidecar publishes to one broker");
    }
}
