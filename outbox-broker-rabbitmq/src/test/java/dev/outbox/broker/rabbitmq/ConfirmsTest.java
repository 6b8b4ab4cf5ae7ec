package dev.outbox.broker.rabbitmq;

import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/** The sequence-number bookkeeping, driven step by step: no node, no threads. */
class ConfirmsTest {
    private final Map<Long, DeliveryException> settled = new LinkedHashMap<>();
    private final Confirms confirms = new Confirms((f, e) -> settled.put(f.record().id(), e));

    private Confirms.InFlight add(long sequence, String key, UUID messageId, long deadline) {
        OutboxRecord r = new OutboxRecord(sequence * 10, Instant.EPOCH, OutboxMessage.of("t", key, "v"), 0,
                UUID.randomUUID(), messageId);
        Confirms.InFlight f = new Confirms.InFlight(r, "x", key, new CompletableFuture<>(), deadline);
        assertThat(confirms.add(sequence, f)).isTrue();
        return f;
    }

    @Test
    void aMultipleAckSettlesEverySequenceUpToIt() {
        add(1, "a", null, 0);
        add(2, "b", null, 0);
        add(3, "c", null, 0);

        confirms.ack(2, true);

        assertThat(settled).containsOnlyKeys(10L, 20L).containsValues((DeliveryException) null);
        assertThat(confirms.size()).isEqualTo(1);
        confirms.ack(2, false); // a repeat settles nothing twice
        assertThat(settled).hasSize(2);
    }

    @Test
    void aNackFailsRetriablyAndOnlyItsSequence() {
        add(1, "a", null, 0);
        add(2, "b", null, 0);

        confirms.nack(2, false);

        assertThat(settled).containsOnlyKeys(20L);
        assertThat(settled.get(20L).kind()).isEqualTo(DeliveryException.Kind.RETRIABLE);
    }

    @Test
    void aReturnMakesTheFollowingAckAPermanentFailureOfTheMatchingRecord() {
        UUID first = MessageIds.next();
        UUID second = MessageIds.next();
        add(1, "k", first, 0);
        add(2, "k", second, 0);

        boolean matched = confirms.returned("x", "k", second.toString(),
                f -> DeliveryException.permanent("returned " + f.record().id(), null));
        confirms.ack(2, true);

        assertThat(matched).isTrue();
        assertThat(settled.get(10L)).as("the other record of that routing key").isNull();
        assertThat(settled.get(20L).isPermanent()).isTrue();
        assertThat(settled.get(20L).getMessage()).isEqualTo("returned 20");
    }

    @Test
    void withoutMessageIdsAReturnMatchesTheLowestRecordOfThatExchangeAndRoutingKey() {
        add(1, "other", null, 0);
        add(2, "k", null, 0);
        add(3, "k", null, 0);

        confirms.returned("x", "k", null, f -> DeliveryException.permanent("returned", null));
        assertThat(confirms.returned("x", "nope", null, f -> DeliveryException.permanent("-", null))).isFalse();
        confirms.ack(3, true);

        assertThat(settled.get(10L)).isNull();
        assertThat(settled.get(20L)).isNotNull();
        assertThat(settled.get(30L)).isNull();
    }

    @Test
    void overdueRecordsExpireAndAClosedChannelFailsTheRestAndRefusesMore() {
        add(1, "a", null, 100);
        add(2, "b", null, 300);

        assertThat(confirms.expire(200, f -> DeliveryException.outage("late", null))).isEqualTo(1);
        assertThat(settled.get(10L).isOutage()).isTrue();

        assertThat(confirms.closeAndFailAll(f -> DeliveryException.outage("closed", null))).isEqualTo(1);
        assertThat(settled.get(20L).getMessage()).isEqualTo("closed");
        OutboxRecord r = new OutboxRecord(99, Instant.EPOCH, OutboxMessage.of("t", "k", "v"), 0, UUID.randomUUID());
        assertThat(confirms.add(3, new Confirms.InFlight(r, "x", "k", new CompletableFuture<>(), 0))).isFalse();
    }
}
