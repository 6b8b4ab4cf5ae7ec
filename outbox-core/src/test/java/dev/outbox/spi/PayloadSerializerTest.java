package dev.outbox.spi;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PayloadSerializerTest {
    /** A serializer of strings as text/plain, to test the default method without a serialization library. */
    private static final PayloadSerializer TEXT = new PayloadSerializer() {
        @Override
        public String contentType() {
            return "text/plain";
        }

        @Override
        public byte[] serialize(Object payload) {
            return payload.toString().getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public <T> T deserialize(byte[] value, Class<T> type) {
            return type.cast(new String(value, StandardCharsets.UTF_8));
        }
    };

    @Test
    void aMessageCarriesTheSerializedPayloadAndItsContentType() {
        OutboxMessage m = TEXT.message("orders", "customer-42", "placed");

        assertThat(m.topic()).isEqualTo("orders");
        assertThat(m.key()).isEqualTo("customer-42");
        assertThat(new String(m.value(), StandardCharsets.UTF_8)).isEqualTo("placed");
        assertThat(m.headers()).containsExactly(Header.of(PayloadSerializer.CONTENT_TYPE_HEADER, "text/plain"));
    }

    @Test
    void aNullPayloadIsATombstoneWithoutContentType() {
        OutboxMessage m = TEXT.message("orders", "customer-42", null);

        assertThat(m.isTombstone()).isTrue();
        assertThat(m.headers()).isEmpty();
    }

    @Test
    void anInvalidTopicIsRejectedNamingIt() {
        assertThatThrownBy(() -> TEXT.message("bad topic", "k", "v"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bad topic");
    }
}
