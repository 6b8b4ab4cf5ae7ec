package dev.outbox;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OutboxMessageTest {

    @Test
    void keepsFieldsAndHeaderOrderWithRepeats() {
        OutboxMessage m = OutboxMessage.builder("orders", "order-1")
                .value("hello")
                .header("b", "2")
                .header("a", (byte[]) null)
                .header("b", "3")
                .build();
        assertThat(m.topic()).isEqualTo("orders");
        assertThat(m.key()).isEqualTo("order-1");
        assertThat(new String(m.value(), StandardCharsets.UTF_8)).isEqualTo("hello");
        assertThat(m.headers()).extracting(Header::name).containsExactly("b", "a", "b");
        assertThat(m.headers()).extracting(Header::valueAsString).containsExactly("2", null, "3");
        assertThat(m.isTombstone()).isFalse();
    }

    @Test
    void nullValueIsATombstone() {
        assertThat(OutboxMessage.tombstone("t", "k").isTombstone()).isTrue();
        assertThat(OutboxMessage.of("t", "k", (byte[]) null).valueSize()).isZero();
    }

    @Test
    void copiesByteArraysInAndOut() {
        byte[] value = {1, 2, 3};
        OutboxMessage m = OutboxMessage.of("t", "k", value);
        value[0] = 9;
        m.value()[1] = 9;
        assertThat(m.value()).containsExactly(1, 2, 3);
    }

    @Test
    void rejectsBadInputNamingTheValue() {
        assertThatThrownBy(() -> OutboxMessage.of("t", null, "v")).hasMessageContaining("key must not be null");
        assertThatThrownBy(() -> OutboxMessage.of(null, "k", "v")).hasMessageContaining("topic must not be null");
        assertThatThrownBy(() -> OutboxMessage.of("  ", "k", "v")).hasMessageContaining("blank");
        assertThatThrownBy(() -> OutboxMessage.of("my topic", "k", "v")).hasMessageContaining("'my topic'");
        char[] longTopic = new char[250];
        Arrays.fill(longTopic, 'x');
        assertThatThrownBy(() -> OutboxMessage.of(new String(longTopic), "k", "v"))
                .hasMessageContaining("250 characters");
        assertThatThrownBy(() -> Header.of("", "v")).hasMessageContaining("header name must not be empty");
        assertThatThrownBy(() -> OutboxMessage.of("t", "k", new byte[0], Arrays.asList(Header.of("a", "b"), null)))
                .hasMessageContaining("header 1");
    }

    @Test
    void equalityIsByContent() {
        OutboxMessage a = OutboxMessage.of("t", "k", new byte[] {1}, List.of(Header.of("h", "v")));
        OutboxMessage b = OutboxMessage.of("t", "k", new byte[] {1}, List.of(Header.of("h", "v")));
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
    }

    @Test
    void recordValidatesIdAndAttempts() {
        OutboxMessage m = OutboxMessage.of("t", "k", "v");
        assertThatThrownBy(() -> new OutboxRecord(0, java.time.Instant.now(), m, 0, null))
                .hasMessageContaining("id must be positive: 0");
        assertThatThrownBy(() -> new OutboxRecord(1, java.time.Instant.now(), m, -1, null))
                .hasMessageContaining("attempts must not be negative: -1");
    }

    @Test
    void deliveryOptionsAreKeptByCopiesAndDroppedOnRequest() {
        Instant at = Instant.parse("2026-12-01T08:00:00Z");
        OutboxMessage m = OutboxMessage.builder("reminders", "user-1").value("v").deliverAt(at)
                .idempotencyKey("request-42").build();
        assertThat(m.deliverAt()).isEqualTo(at);
        assertThat(m.deliverAfter()).isNull();
        assertThat(m.isDelayed()).isTrue();
        assertThat(m.idempotencyKey()).isEqualTo("request-42");
        OutboxMessage decorated = m.withHeader(Header.of("h", "1"));
        assertThat(decorated.deliverAt()).isEqualTo(at);
        assertThat(decorated.idempotencyKey()).isEqualTo("request-42");
        assertThat(m).isNotEqualTo(m.withoutDeliveryOptions());
        assertThat(m.withoutDeliveryOptions().isDelayed()).isFalse();
        assertThat(m.withoutDeliveryOptions().idempotencyKey()).isNull();
        assertThat(m.toString()).contains("deliverAt=2026-12-01T08:00:00Z", "idempotencyKey=request-42");

        OutboxMessage later = OutboxMessage.builder("reminders", "user-1").deliverAt(at)
                .deliverAfter(Duration.ofMinutes(5)).build();
        assertThat(later.deliverAt()).isNull();
        assertThat(later.deliverAfter()).isEqualTo(Duration.ofMinutes(5));
        OutboxMessage plain = OutboxMessage.of("t", "k", "v");
        assertThat(plain.isDelayed()).isFalse();
        assertThat(plain.withoutDeliveryOptions()).isSameAs(plain);
    }

    @Test
    void badDeliveryOptionsAreRefusedNamingThem() {
        assertThatThrownBy(() -> OutboxMessage.builder("t", "k").deliverAfter(Duration.ofSeconds(-1)))
                .hasMessageContaining("deliverAfter must not be negative: PT-1S");
        assertThatThrownBy(() -> OutboxMessage.builder("t", "k").idempotencyKey(" ").build())
                .hasMessageContaining("idempotencyKey must not be blank: ' '");
        assertThatThrownBy(() -> OutboxMessage.builder("t", "k").idempotencyKey("x".repeat(201)).build())
                .hasMessageContaining("idempotencyKey is 201 characters, longer than 200");
    }
}
