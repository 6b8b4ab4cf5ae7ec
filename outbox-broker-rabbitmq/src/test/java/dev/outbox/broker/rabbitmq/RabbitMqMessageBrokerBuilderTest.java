package dev.outbox.broker.rabbitmq;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The builder refuses bad values with a message naming them, and never shows a password. */
class RabbitMqMessageBrokerBuilderTest {

    @Test
    void badValuesAreNamed() {
        RabbitMqMessageBroker.Builder b = RabbitMqMessageBroker.builder();
        assertThatThrownBy(() -> b.confirmTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("confirmTimeout").hasMessageContaining("0 ms");
        assertThatThrownBy(() -> b.confirmTimeout(Duration.ofMinutes(3))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("confirmTimeout").hasMessageContaining("180000 ms");
        assertThatThrownBy(() -> b.operationTimeout(Duration.ofMillis(10)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("operationTimeout");
        assertThatThrownBy(() -> b.heartbeat(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("heartbeat");
        assertThatThrownBy(() -> b.maxMessageSize(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxMessageSize");
        assertThatThrownBy(() -> b.connectionName(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("connectionName");
        assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("uri");
    }

    @Test
    void aBadUriIsRefusedWithoutItsPassword() {
        assertThatThrownBy(() -> RabbitMqMessageBroker.builder().uri("http://app:s3cret@host/"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("app:***@host")
                .hasMessageNotContaining("s3cret").hasNoCause();
        assertThatThrownBy(() -> RabbitMqMessageBroker.builder().uri("amqp://app:s3cret@ho st:x/"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("s3cret").hasNoCause();
    }
}
