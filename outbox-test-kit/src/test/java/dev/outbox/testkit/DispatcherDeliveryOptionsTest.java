package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.testkit.BrokerFaults.Fault;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's side of the delivery options ({@code StoreHousekeeping}), against the in-memory model of a store that
 * carries them out ({@link InMemoryDeliveryOptions}): the leader moves due messages into the outbox and the harvest
 * sends them, never before their time by the store's clock, a held key in its order (or, not held, each at its own
 * time, a plain message passing them); expired idempotency keys are swept while it leads. A store without the
 * options is refused nothing and starts no housekeeping.
 */
class DispatcherDeliveryOptionsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void close() {
        dispatchers.forEach(Dispatcher::close);
    }

    @Test
    void aDelayedMessageGoesOutAfterItsTimeAndItsKeyWaitsBehindIt() {
        Clock clock = Clock.systemUTC();
        InMemoryDeliveryOptions store = InMemoryDeliveryOptions.wrap(new InMemoryStore(clock)).clock(clock)
                .scheduling().build();
        Map<String, Instant> sentAt = new ConcurrentHashMap<>();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> {
            sentAt.putIfAbsent(value(r), clock.instant());
            return Fault.ACK;
        }).build();
        start(store, broker);
        Instant written = clock.instant();
        Duration delay = Duration.ofMillis(400);
        store.publisher().publish(null, List.of(
                OutboxMessage.builder("t", "k").value("delayed").deliverAfter(delay).build(),
                OutboxMessage.of("t", "k", "behind"),
                OutboxMessage.of("t", "other", "free")));

        Await.untilOrFail(() -> broker.deliveredCount() == 3, WAIT, () -> "delivered: " + broker.delivered());
        assertThat(sentAt.get("free")).as("another key is not held").isBefore(written.plus(delay));
        assertThat(sentAt.get("delayed")).as("not before its time").isAfterOrEqualTo(written.plus(delay));
        assertThat(broker.delivered("t").stream().filter(r -> r.key().equals("k")).map(
                DispatcherDeliveryOptionsTest::value)).containsExactly("delayed", "behind");
        assertThat(store.waitingCount()).isZero();
    }

    /**
     * With the key not held: a message without a time goes straight into the outbox past a waiting one of its key,
     * and each delayed one goes at its own time, the later-written one first when it is due first.
     */
    @Test
    void notHoldingTheKeyAPlainMessagePassesAndEachDelayedOneGoesAtItsOwnTime() {
        assertThatThrownBy(() -> InMemoryDeliveryOptions.wrap(new InMemoryStore()).scheduledHoldsKey(false).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("scheduling()");
        Clock clock = Clock.systemUTC();
        InMemoryDeliveryOptions store = InMemoryDeliveryOptions.wrap(new InMemoryStore(clock)).clock(clock)
                .scheduling().scheduledHoldsKey(false).build();
        Map<String, Instant> sentAt = new ConcurrentHashMap<>();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> {
            sentAt.putIfAbsent(value(r), clock.instant());
            return Fault.ACK;
        }).build();
        Instant written = clock.instant();
        Duration late = Duration.ofMillis(600);
        Duration early = Duration.ofMillis(200);
        store.publisher().publish(null, List.of(OutboxMessage.builder("t", "k").value("late").deliverAfter(late)
                .build(), OutboxMessage.builder("t", "k").value("early").deliverAfter(early).build()));
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "k", "plain")));
        assertThat(store.waitingCount()).as("only the delayed ones wait").isEqualTo(2);
        assertThat(store.store().size()).as("the plain one went straight in").isEqualTo(1);

        start(store, broker);
        Await.untilOrFail(() -> broker.deliveredCount() == 3, WAIT, () -> "delivered: " + broker.delivered());
        assertThat(broker.delivered("t").stream().map(DispatcherDeliveryOptionsTest::value))
                .containsExactly("plain", "early", "late");
        assertThat(sentAt.get("early")).as("not before its time").isAfterOrEqualTo(written.plus(early));
        assertThat(sentAt.get("late")).as("not before its time").isAfterOrEqualTo(written.plus(late));
    }

    @Test
    void aDuplicateIsSkippedOrRefusedAndExpiredKeysAreSweptWhileLeading() {
        InMemoryDeliveryOptions skip = InMemoryDeliveryOptions.wrap(new InMemoryStore())
                .idempotencyKeys(Duration.ofMillis(1), InMemoryDeliveryOptions.OnDuplicate.SKIP).build();
        OutboxMessage first = OutboxMessage.builder("t", "k").value("1").idempotencyKey("order-7").build();
        skip.publisher().publish(null, List.of(first, first));
        assertThat(skip.store().size()).as("a repeat in one call").isEqualTo(1);
        assertThat(skip.duplicates()).isEqualTo(1);

        InMemoryDeliveryOptions fail = InMemoryDeliveryOptions.wrap(new InMemoryStore())
                .idempotencyKeys(Duration.ofHours(1), InMemoryDeliveryOptions.OnDuplicate.FAIL).build();
        fail.publisher().publish(null, List.of(first));
        assertThatThrownBy(() -> fail.publisher().publish(null, List.of(OutboxMessage.of("t", "k2", "x"), first)))
                .isInstanceOf(DuplicateMessageException.class).hasMessageContaining("'order-7'");
        assertThat(fail.store().size()).as("nothing of the refused call").isEqualTo(1);

        InMemoryBroker broker = new InMemoryBroker();
        start(skip, broker);
        Await.untilOrFail(() -> skip.idempotencyKeyCount() == 0 && broker.deliveredCount() == 1, WAIT,
                () -> "keys " + skip.idempotencyKeyCount() + ", delivered " + broker.deliveredCount());
    }

    @Test
    void theRetentionCountsFromTheFirstWriteNotFromADuplicate() {
        Instant[] now = {Instant.parse("2026-01-01T00:00:00Z")};
        Clock clock = new Clock() {
            @Override
            public java.time.ZoneId getZone() {
                return java.time.ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                throw new UnsupportedOperationException("withZone");
            }

            @Override
            public Instant instant() {
                return now[0];
            }
        };
        InMemoryDeliveryOptions store = InMemoryDeliveryOptions.wrap(new InMemoryStore()).clock(clock)
                .idempotencyKeys(Duration.ofSeconds(10), InMemoryDeliveryOptions.OnDuplicate.SKIP).build();
        OutboxMessage m = OutboxMessage.builder("t", "k").value("1").idempotencyKey("order-7").build();
        store.publisher().publish(null, List.of(m));
        now[0] = now[0].plusSeconds(6);
        store.publisher().publish(null, List.of(m));
        assertThat(store.store().size()).as("a duplicate within the retention").isEqualTo(1);
        now[0] = now[0].plusSeconds(5); // 11 s after the first write, 5 s after the duplicate
        store.publisher().publish(null, List.of(m));
        assertThat(store.store().size()).as("the key expired 10 s after its first write: written again")
                .isEqualTo(2);
    }

    @Test
    void aStoreWithoutTheOptionsRefusesThemNamingTheMessage() {
        InMemoryDeliveryOptions none = InMemoryDeliveryOptions.wrap(new InMemoryStore()).build();
        assertThatThrownBy(() -> none.publisher().publish(null, List.of(OutboxMessage.builder("t", "k")
                .deliverAt(Instant.parse("2030-01-01T00:00:00Z")).build())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("message 0 (topic 't', key 'k') asks not to be sent before 2030-01-01T00:00:00Z");
        assertThatThrownBy(() -> none.publisher().publish(null, List.of(OutboxMessage.builder("t", "k")
                .idempotencyKey("x").build())))
                .hasMessageContaining("has the idempotency key 'x'");
    }

    private void start(InMemoryDeliveryOptions store, InMemoryBroker broker) {
        Dispatcher d = Dispatcher.builder(store, broker).config(DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(20)).drainTimeout(Duration.ofSeconds(5)).build())
                .name("options").build();
        dispatchers.add(d);
        d.start();
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }
}
