package dev.outbox.broker.kafka;

import dev.outbox.DispatcherConfig;
import dev.outbox.spi.Heartbeat;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The consumer settings and timing relations the leader transport enforces; no Kafka needed to build one. */
class KafkaLeaderTransportSettingsTest {
    private static final String NOWHERE = "127.0.0.1:9";

    private static KafkaLeaderTransport.Builder builder() {
        return KafkaLeaderTransport.builder().bootstrapServers(NOWHERE).topic("orders-leader");
    }

    @Test
    void defaultTimingsFollowTheDocumentedRelations() {
        KafkaLeaderTransport t = builder().build();
        assertThat(t.groupId()).isEqualTo("orders-leader");
        assertThat(t.heartbeatInterval()).isEqualTo(Duration.ofSeconds(1));
        // max(3 x 5 s, 5 s + 8 s + 1 s)
        assertThat(t.sessionTimeout()).isEqualTo(Duration.ofSeconds(15));
        assertThat(t.maxPollInterval()).isEqualTo(Duration.ofSeconds(15));
    }

    @Test
    void timingsFollowTheDispatcherAndTheBroker() {
        DispatcherConfig config = DispatcherConfig.builder().heartbeatTimeout(Duration.ofSeconds(2))
                .drainTimeout(Duration.ofSeconds(20)).build();
        KafkaLeaderTransport t = builder().dispatcherConfig(config).deliveryTimeout(Duration.ofSeconds(3)).build();
        assertThat(t.heartbeatInterval()).isEqualTo(Duration.ofMillis(666));
        assertThat(t.sessionTimeout()).isEqualTo(Duration.ofMillis(6000)); // max(3 x 2 s, 2 + 3 + 0.666 s)
        assertThat(t.maxPollInterval()).isEqualTo(Duration.ofMillis(20_666)); // drain + interval
    }

    @Test
    void rejectsASessionTimeoutShorterThanFenceAndSettle() {
        assertThatThrownBy(() -> builder().consumerProperty("session.timeout.ms", "10000").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'session.timeout.ms'").hasMessageContaining("was 10000")
                .hasMessageContaining("= 14000 ms");
    }

    @Test
    void rejectsAMaxPollIntervalShorterThanTheDrain() {
        assertThatThrownBy(() -> builder().consumerProperty("max.poll.interval.ms", "9000").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'max.poll.interval.ms'").hasMessageContaining("was 9000");
    }

    @Test
    void rejectsSettingsNeliCannotWorkWith() {
        assertThatThrownBy(() -> builder().consumerProperty("enable.auto.commit", "true").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'enable.auto.commit'");
        assertThatThrownBy(() -> builder().consumerProperty("auto.offset.reset", "earliest").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'auto.offset.reset'")
                .hasMessageContaining("was 'earliest'");
        assertThatThrownBy(() -> builder().consumerProperty("group.protocol", "consumer").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'group.protocol'");
        assertThatThrownBy(() -> builder().consumerProperty("group.instance.id", "a").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'group.instance.id'");
        assertThatThrownBy(() -> builder().groupId("g1").consumerProperty("group.id", "g2").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'g2'")
                .hasMessageContaining("'g1'");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic("t").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'bootstrap.servers'");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().bootstrapServers(NOWHERE).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topic must be set");
    }

    @Test
    void validatesTopicAndGroupNames() {
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic("orders leader"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'orders leader'")
                .hasMessageContaining("index 6");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic(""))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic("x".repeat(250)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("250 characters");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic("__consumer_offsets"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'__consumer_offsets'");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topic(".."))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().groupId(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("' '");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().groupId("a\tb"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("index 1");
        assertThatThrownBy(() -> KafkaLeaderTransport.builder().topicReplicationFactor(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 0");
    }

    @Test
    void heartbeatsRoundTripCompactly() {
        Heartbeat hb = new Heartbeat(UUID.randomUUID(), 42);
        byte[] bytes = HeartbeatCodec.encode(hb);
        assertThat(bytes).hasSize(25);
        assertThat(HeartbeatCodec.decode(bytes)).isEqualTo(hb);
        assertThat(HeartbeatCodec.decode(new byte[3])).isNull();
        assertThat(HeartbeatCodec.decode(null)).isNull();
        bytes[0] = 9;
        assertThat(HeartbeatCodec.decode(bytes)).isNull();
    }
}
