package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.outbox.Header;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How a message is written as AMQP properties and read back, without a node. */
class RabbitMqHeadersTest {

    private static OutboxRecord record(OutboxMessage m, UUID messageId) {
        return new OutboxRecord(7, Instant.parse("2026-11-27T10:15:30.789Z"), m, 0, UUID.randomUUID(), messageId);
    }

    @Test
    void repeatedNullAndBinaryHeadersComeBackInOrder() {
        OutboxMessage m = OutboxMessage.builder("t", "k").value("v").header("a", "1").header("b", (byte[]) null)
                .header("a", (byte[]) null).header("c", new byte[]{0, -1}).header("a", "3").build();

        AMQP.BasicProperties p = RabbitMqHeaders.properties(record(m, null));

        assertThat(RabbitMqHeaders.headers(p)).isEqualTo(m.headers());
        assertThat(p.getHeaders().get("a")).as("a repeated name: an array of its values").isInstanceOf(List.class);
        assertThat(p.getHeaders()).containsKey(RabbitMqHeaders.HEADER_NAMES)
                .doesNotContainKey(RabbitMqHeaders.TOMBSTONE);
        assertThat(p.getMessageId()).isNull();
    }

    @Test
    void aSingleHeaderNeedsNoListOfNamesAndPropertiesCarryIdTypeTimeAndPersistence() {
        UUID id = MessageIds.next();
        OutboxMessage m = OutboxMessage.builder("t", "k").value("{}").header("content-type", "application/json")
                .build();

        AMQP.BasicProperties p = RabbitMqHeaders.properties(record(m, id));

        assertThat(p.getHeaders()).containsOnlyKeys("content-type");
        assertThat(RabbitMqHeaders.headers(p)).isEqualTo(m.headers());
        assertThat(p.getContentType()).isEqualTo("application/json");
        assertThat(p.getMessageId()).isEqualTo(id.toString());
        assertThat(RabbitMqHeaders.messageId(p)).isEqualTo(id);
        assertThat(p.getDeliveryMode()).isEqualTo(2);
        assertThat(p.getTimestamp().toInstant()).isEqualTo(Instant.parse("2026-11-27T10:15:30Z"));
    }

    @Test
    void aTombstoneIsMarkedAndAnEmptyValueIsNot() {
        AMQP.BasicProperties tombstone = RabbitMqHeaders.properties(record(OutboxMessage.tombstone("t", "k"), null));
        AMQP.BasicProperties empty = RabbitMqHeaders.properties(record(OutboxMessage.of("t", "k", new byte[0]), null));

        assertThat(RabbitMqHeaders.value(tombstone, new byte[0])).isNull();
        assertThat(RabbitMqHeaders.headers(tombstone)).isEmpty();
        assertThat(RabbitMqHeaders.value(empty, new byte[0])).isEmpty();
        assertThat(empty.getHeaders()).isNull();
    }

    @Test
    void anotherPublishersHeadersAreReadAndAForeignMessageIdIsNone() {
        Map<String, Object> table = new LinkedHashMap<>();
        table.put("text", LongStringHelper.asLongString("x"));
        table.put("number", 42);
        table.put("outbox-tombstone", false);
        AMQP.BasicProperties p = new AMQP.BasicProperties.Builder().headers(table).messageId("order-42").build();

        assertThat(RabbitMqHeaders.headers(p)).as("in no particular order: an AMQP table has none")
                .containsExactlyInAnyOrder(Header.of("text", "x"), Header.of("number", "42"));
        assertThat(RabbitMqHeaders.messageId(p)).isNull();
        assertThat(RabbitMqHeaders.value(p, null)).isEmpty();
    }

    @Test
    void aHeaderWithTheAdaptersPrefixIsRefused() {
        OutboxMessage m = OutboxMessage.builder("t", "k").value("v").header("outbox-header-names", "mine").build();

        assertThatThrownBy(() -> RabbitMqHeaders.properties(record(m, null)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'outbox-header-names'");
    }
}
