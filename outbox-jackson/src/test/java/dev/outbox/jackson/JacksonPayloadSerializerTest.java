package dev.outbox.jackson;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.PayloadSerializationException;
import dev.outbox.spi.PayloadSerializer;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JacksonPayloadSerializerTest {
    record OrderPlaced(long orderId, String customer, BigDecimal total, Instant placedAt) {
    }

    /** Jackson cannot write this: its property's getter fails. */
    static final class Opaque {
        public String getSecret() {
            throw new IllegalStateException("not readable");
        }
    }

    @Test
    void writesARecordAsJsonWithItsContentType() {
        JacksonPayloadSerializer json = JacksonPayloadSerializer.create();
        OrderPlaced order = new OrderPlaced(1001, "customer-42", new BigDecimal("19.90"),
                Instant.parse("2026-11-23T10:15:30Z"));

        OutboxMessage m = json.message("orders", "customer-42", order);

        assertThat(new String(m.value(), StandardCharsets.UTF_8)).isEqualTo(
                "{\"orderId\":1001,\"customer\":\"customer-42\",\"total\":19.90,\"placedAt\":\"2026-11-23T10:15:30Z\"}");
        assertThat(m.headers()).containsExactly(Header.of(PayloadSerializer.CONTENT_TYPE_HEADER, "application/json"));
        assertThat(json.deserialize(m.value(), OrderPlaced.class)).isEqualTo(order);
    }

    @Test
    void usesTheGivenMappersSettings() {
        JacksonPayloadSerializer json = JacksonPayloadSerializer.of(JsonMapper.builder()
                .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE).build());

        byte[] value = json.serialize(new OrderPlaced(7, "c", BigDecimal.ONE, Instant.EPOCH));

        assertThat(new String(value, StandardCharsets.UTF_8)).contains("\"order_id\":7", "\"placed_at\"");
    }

    @Test
    void aPayloadJacksonCannotWriteFailsNamingItsClass() {
        JacksonPayloadSerializer json = JacksonPayloadSerializer.create();

        assertThatThrownBy(() -> json.serialize(new Opaque()))
                .isInstanceOf(PayloadSerializationException.class)
                .hasMessageContaining(Opaque.class.getName());
    }

    @Test
    void unreadableJsonFailsNamingTheType() {
        JacksonPayloadSerializer json = JacksonPayloadSerializer.create();

        assertThatThrownBy(() -> json.deserialize("{not json".getBytes(StandardCharsets.UTF_8), OrderPlaced.class))
                .isInstanceOf(PayloadSerializationException.class)
                .hasMessageContaining(OrderPlaced.class.getName());
    }
}
