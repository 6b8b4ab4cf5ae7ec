package dev.outbox.spi;

import dev.outbox.Header;
import dev.outbox.MessageDecorator;
import dev.outbox.MessageRejectedException;
import dev.outbox.OutboxMessage;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MessageDecoratorsTest {
    private static final List<OutboxMessage> TWO = List.of(OutboxMessage.of("orders", "a", "1"),
            OutboxMessage.of("orders", "b", "2"));

    @Test
    void noDecoratorReturnsTheSameList() {
        assertThat(MessageDecorators.none().apply(TWO)).isSameAs(TWO);
        assertThat(MessageDecorators.of(List.of())).isSameAs(MessageDecorators.none());
    }

    @Test
    void decoratorsApplyInOrderToEveryMessage() {
        MessageDecorators d = MessageDecorators.of(List.of(
                m -> m.withHeader(Header.of("step", "1")),
                m -> m.withHeaderReplaced("step", "2").withHeader(Header.of("key", m.key()))));
        List<OutboxMessage> out = d.apply(TWO);
        assertThat(out).hasSize(2);
        assertThat(out.get(0).headers()).extracting(Header::valueAsString).containsExactly("2", "a");
        assertThat(out.get(1).headers()).extracting(Header::valueAsString).containsExactly("2", "b");
        assertThat(out.get(1).value()).isEqualTo(TWO.get(1).value());
    }

    @Test
    void aThrowingDecoratorRejectsTheMessageNamingItTheDecoratorAndTheCause() {
        MessageDecorator tenantCheck = m -> {
            if (m.key().equals("b")) {
                throw new IllegalStateException("no tenant on the current thread");
            }
            return m;
        };
        assertThatThrownBy(() -> MessageDecorators.of(List.of(tenantCheck)).apply(TWO))
                .isInstanceOf(MessageRejectedException.class)
                .hasMessageContaining("message 1 (topic 'orders', key 'b') was rejected by decorator")
                .hasMessageContaining("no tenant on the current thread")
                .hasCauseInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> MessageDecorators.of(List.of(m -> null)).apply(TWO))
                .isInstanceOf(MessageRejectedException.class)
                .hasMessageContaining("message 0 (topic 'orders', key 'a')").hasMessageContaining("returned null");
    }

    @Test
    void aNullDecoratorIsRejectedNamingItsIndex() {
        assertThatThrownBy(() -> MessageDecorators.of(Arrays.asList(m -> m, null)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("decorator 1 is null");
    }
}
