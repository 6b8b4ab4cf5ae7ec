package dev.outbox.examples;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DemoOptionsTest {

    @Test
    void defaultsUseEmbeddedServersAndAShortRun() {
        DemoOptions o = DemoOptions.defaults();

        assertThat(o.postgresUrl()).isNull();
        assertThat(o.kafkaBootstrap()).isNull();
        assertThat(o.duration()).isEqualTo(Duration.ofSeconds(20));
        assertThat(o.dispatchers()).isEqualTo(3);
        assertThat(o.takeover()).isTrue();
        assertThat(o.election()).isEqualTo("kafka");
    }

    @Test
    void theElectionIsKafkaOrDatabaseAndAnythingElseIsRefusedNamingTheOption() {
        assertThat(DemoOptions.parse(new String[]{"--election", "database"}, Map.of()).election())
                .isEqualTo("database");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--election", "zookeeper"}, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--election must be kafka or database, was 'zookeeper'");
    }

    @Test
    void theBrokerIsKafkaOrRabbitMqWhichElectsInTheDatabaseAndHidesTheUrisPassword() {
        assertThat(DemoOptions.defaults().broker()).isEqualTo("kafka");
        DemoOptions rabbit = DemoOptions.parse(new String[]{"--broker", "rabbitmq"},
                Map.of("OUTBOX_DEMO_RABBITMQ_URI", "amqp://demo:secret@rabbit:5672/%2F"));
        assertThat(rabbit.broker()).isEqualTo("rabbitmq");
        assertThat(rabbit.election()).as("the default election with RabbitMQ").isEqualTo("database");
        assertThat(rabbit.rabbitMqUri()).isEqualTo("amqp://demo:secret@rabbit:5672/%2F");
        assertThat(rabbit.toString()).contains("amqp://demo:***@rabbit:5672/%2F").doesNotContain("secret");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--broker", "rabbitmq", "--election", "kafka"},
                Map.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--broker rabbitmq needs --election database");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--broker", "pulsar"}, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--broker must be kafka or rabbitmq, was 'pulsar'");
    }

    @Test
    void flagsWinOverTheEnvironment() {
        DemoOptions o = DemoOptions.parse(new String[]{"--kafka-bootstrap", "k:9092", "--duration=90s", "--rate", "0",
                "--no-takeover", "--drain-timeout", "500ms"}, Map.of("OUTBOX_DEMO_KAFKA_BOOTSTRAP", "env:9092",
                "OUTBOX_DEMO_POSTGRES_URL", "jdbc:postgresql://db/app"));

        assertThat(o.kafkaBootstrap()).isEqualTo("k:9092");
        assertThat(o.postgresUrl()).isEqualTo("jdbc:postgresql://db/app");
        assertThat(o.duration()).isEqualTo(Duration.ofSeconds(90));
        assertThat(o.drainTimeout()).isEqualTo(Duration.ofMillis(500));
        assertThat(o.rate()).isZero();
        assertThat(o.takeover()).isFalse();
        assertThat(new DemoCommand.Time().convert("2m")).isEqualTo(Duration.ofMinutes(2));
    }

    @Test
    void thePasswordComesFromTheEnvironmentOrAFileNeverTheCommandLine(@org.junit.jupiter.api.io.TempDir
                                                                       java.nio.file.Path dir) throws Exception {
        String secret = "s3cr3t-Pa55";
        DemoOptions fromEnv = DemoOptions.parse(new String[0], Map.of("OUTBOX_DEMO_POSTGRES_PASSWORD", secret));
        assertThat(fromEnv.postgresPassword()).isEqualTo(secret);
        assertThat(fromEnv.toString()).contains("postgresPassword=***").doesNotContain(secret);

        java.nio.file.Path file = java.nio.file.Files.writeString(dir.resolve("pw"), secret + "\n");
        DemoOptions fromFile = DemoOptions.parse(new String[]{"--postgres-password-file", file.toString()},
                Map.of("OUTBOX_DEMO_POSTGRES_PASSWORD", "from-env"));
        assertThat(fromFile.postgresPassword()).isEqualTo(secret);

        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--postgres-password", secret}, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--postgres-password is not accepted")
                .hasMessageContaining("OUTBOX_DEMO_POSTGRES_PASSWORD")
                .hasMessageNotContaining(secret);
        java.nio.file.Path missing = dir.resolve("missing");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--postgres-password-file", missing.toString()},
                Map.of())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(missing.toString());
        assertThat(DemoOptions.defaults().toString()).contains("postgresPassword=,");
        for (String url : new String[]{"jdbc:postgresql://db/app?user=app&password=" + secret,
                "jdbc:mysql://app:" + secret + "@db/app"}) {
            assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--postgres-url", url}, Map.of()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("carries a password")
                    .hasMessageContaining("OUTBOX_DEMO_POSTGRES_PASSWORD")
                    .hasMessageNotContaining(secret);
            assertThatThrownBy(() -> DemoOptions.parse(new String[0], Map.of("OUTBOX_DEMO_POSTGRES_URL", url)))
                    .hasMessageContaining("carries a password").hasMessageNotContaining(secret);
        }
        assertThat(DemoOptions.parse(new String[]{"--postgres-url", "jdbc:postgresql://db:5432/app?ssl=true"},
                Map.of()).postgresUrl()).as("no password: accepted").endsWith("ssl=true");
    }

    @Test
    void badOptionsAreNamed() {
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--writers", "x"}, Map.of()))
                .hasMessageContaining("--writers").hasMessageContaining("'x'");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--dispatchers", "0"}, Map.of()))
                .hasMessageContaining("--dispatchers").hasMessageContaining("0");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--duration", "soon"}, Map.of()))
                .hasMessageContaining("'soon'");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--bogus"}, Map.of()))
                .hasMessageContaining("--bogus");
        assertThatThrownBy(() -> DemoOptions.parse(new String[]{"--rate"}, Map.of()))
                .hasMessageContaining("Missing required parameter for option '--rate'");
    }
}
