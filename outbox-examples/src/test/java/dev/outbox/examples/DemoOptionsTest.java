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
