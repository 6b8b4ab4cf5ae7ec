package dev.outbox.broker.kafka;

import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The producer settings the broker enforces. Building a producer does not connect, so these tests need no
 * Kafka; the address below is never dialled.
 */
class KafkaMessageBrokerSettingsTest {
    private static final String NOWHERE = "127.0.0.1:9";

    private static KafkaSettings props(Object... kv) {
        KafkaSettings s = new KafkaSettings();
        s.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, NOWHERE);
        for (int i = 0; i < kv.length; i += 2) {
            s.put((String) kv[i], kv[i + 1]);
        }
        return s;
    }

    private static Map<String, Object> config(Object... kv) {
        return KafkaMessageBroker.Builder.producerConfig(props(kv));
    }

    @Test
    void defaultsAreIdempotentBoundedAndOrdered() {
        Map<String, Object> c = config();
        assertThat(c).containsEntry(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true")
                .containsEntry(ProducerConfig.ACKS_CONFIG, "all")
                .containsEntry(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5)
                .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 8000)
                .containsEntry(ProducerConfig.MAX_BLOCK_MS_CONFIG, 4000L); // half the delivery timeout
        long linger = ((Number) c.get(ProducerConfig.LINGER_MS_CONFIG)).longValue();
        long request = ((Number) c.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG)).longValue();
        assertThat(linger + request).isLessThanOrEqualTo(8000);
    }

    @Test
    void userSettingsPassThrough() {
        Map<String, Object> c = config("compression.type", "lz4", "security.protocol", "SSL",
                "ssl.truststore.location", "/etc/trust.jks", "acks", "-1", "linger.ms", "20");
        assertThat(c).containsEntry("compression.type", "lz4").containsEntry("security.protocol", "SSL")
                .containsEntry("ssl.truststore.location", "/etc/trust.jks").containsEntry("acks", "all")
                .containsEntry("linger.ms", 20);
    }

    @Test
    void rejectsIdempotenceOff() {
        assertThatThrownBy(() -> config("enable.idempotence", "false"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'enable.idempotence'").hasMessageContaining("was 'false'");
    }

    @Test
    void rejectsWeakAcks() {
        assertThatThrownBy(() -> config("acks", "1"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'acks'")
                .hasMessageContaining("was '1'");
        assertThatThrownBy(() -> config("acks", 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was '0'");
    }

    @Test
    void rejectsTooManyInFlightRequests() {
        assertThatThrownBy(() -> config("max.in.flight.requests.per.connection", "6"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'max.in.flight.requests.per.connection'").hasMessageContaining("was 6");
        assertThatThrownBy(() -> config("max.in.flight.requests.per.connection", 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 0");
        assertThat(config("max.in.flight.requests.per.connection", "1"))
                .containsEntry("max.in.flight.requests.per.connection", 1);
    }

    @Test
    void rejectsNoRetries() {
        assertThatThrownBy(() -> config("retries", "0"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'retries'")
                .hasMessageContaining("was 0");
    }

    @Test
    void rejectsUnboundedOrInconsistentDeliveryTimeout() {
        assertThatThrownBy(() -> config("delivery.timeout.ms", String.valueOf(Integer.MAX_VALUE)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'delivery.timeout.ms'")
                .hasMessageContaining("was " + Integer.MAX_VALUE);
        assertThatThrownBy(() -> config("delivery.timeout.ms", "3000", "request.timeout.ms", "30000"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'delivery.timeout.ms' (3000 ms)")
                .hasMessageContaining("request.timeout.ms (30000 ms)");
        assertThatThrownBy(() -> config("delivery.timeout.ms", "soon"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 'soon'");
        Map<String, Object> c = config("delivery.timeout.ms", "3000");
        // max.block.ms defaults to half the delivery timeout: the rest is left to confirm a missing topic.
        assertThat(c).containsEntry("delivery.timeout.ms", 3000).containsEntry("max.block.ms", 1500L);
    }

    @Test
    void rejectsUnboundedBlocking() {
        assertThatThrownBy(() -> config("max.block.ms", "60000"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'max.block.ms'")
                .hasMessageContaining("was 60000");
    }

    @Test
    void rejectsSettingsThatScatterKeysOrChangeTheRecordShape() {
        assertThatThrownBy(() -> config("partitioner.ignore.keys", "true"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'partitioner.ignore.keys'");
        assertThatThrownBy(() -> config("transactional.id", "tx-1"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'transactional.id'")
                .hasMessageContaining("tx-1");
        assertThatThrownBy(() -> config("value.serializer", "com.example.Json"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'value.serializer'");
    }

    @Test
    void requiresBootstrapServers() {
        assertThatThrownBy(() -> KafkaMessageBroker.builder().build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'bootstrap.servers'");
    }

    @Test
    void buildsFromPropertiesWithoutConnecting() {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", NOWHERE);
        p.setProperty("compression.type", "zstd");
        KafkaMessageBroker broker = KafkaMessageBroker.builder().properties(p)
                .deliveryTimeout(Duration.ofSeconds(3)).build();
        try {
            assertThat(broker.deliveryTimeout()).isEqualTo(Duration.ofSeconds(3));
            assertThat(broker.flush(Duration.ZERO)).isTrue();
        } finally {
            broker.close(Duration.ZERO);
        }
    }

    @Test
    void kafkaRejectionsOfTheConfigurationNameTheProblem() {
        assertThatThrownBy(() -> KafkaMessageBroker.builder().bootstrapServers(NOWHERE)
                .property("compression.type", "snappier").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("compression.type");
    }
}
