package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.BrokerFaults;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code DispatcherConfig.afterPark(HOLD_KEY)} on the real Postgres server: a record the broker rejects for good is
 * parked and holds its key — the key's later records stay in the table while records of other keys written after them
 * are delivered — until the operator acts. Twice: first the parked row is discarded ({@link PostgresStore#discard}),
 * and the held records flow in order; then another one is replayed ({@link PostgresStore#replay}) and arrives before
 * the held records, which follow in order. A second dispatcher started while the key is held (a new leader) holds it
 * too, from the parked table.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresHoldKeyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int KEYS = 20;

    @Test
    void aParkedRecordHoldsItsKeyUntilItIsDiscardedOrReplayedAndANewLeaderKeepsTheHold() throws Exception {
        String url = PostgresTestSupport.database("outbox_hold_key");
        try (HikariDataSource pool = PostgresTestSupport.pool(url, "hold-key", 4)) {
            PostgresStore store = PostgresStore.builder(pool).build();
            store.createSchema();
            AtomicBoolean rejecting = new AtomicBoolean(true);
            DispatcherConfig config = DispatcherConfig.builder()
                    .pollInterval(Duration.ofMillis(10))
                    .markBackoff(Duration.ofMillis(1))
                    .ioErrorBackoff(Duration.ofMillis(20))
                    .maxIoErrorBackoff(Duration.ofMillis(200))
                    .drainTimeout(Duration.ofSeconds(1))
                    .afterPark(DispatcherConfig.AfterPark.HOLD_KEY)
                    .build();

            // Round 1: poison p0 is parked and discarded.
            InMemoryBroker broker = broker(rejecting);
            publish(pool, store, List.of(msg("poison", "p0"), msg("poison", "p1")));
            publishHealthy(pool, store, 0);
            try (Dispatcher d = Dispatcher.builder(store, broker).config(config).name("pg-hold-1").build()) {
                d.start();
                Await.untilOrFail(() -> store.parkedCount() == 1 && healthy(broker) == KEYS, WAIT,
                        () -> "parked " + store.parkedCount() + ", healthy " + healthy(broker));
                publish(pool, store, List.of(msg("poison", "p2")));
                publishHealthy(pool, store, 1);
                Await.untilOrFail(() -> healthy(broker) == 2 * KEYS, WAIT, () -> "healthy " + healthy(broker));
                assertThat(d.health().heldKeys()).isEqualTo(1);
                assertThat(poison(broker)).as("held").isEmpty();
                Await.untilOrFail(() -> store.backlog() == 2, WAIT, () -> "p1 and p2 wait: backlog " + store.backlog());

                assertThat(store.discard(ids(store.parked(10)))).isEqualTo(1);
                Await.untilOrFail(() -> store.backlog() == 0 && d.health().heldKeys() == 0, WAIT,
                        () -> "released: backlog " + store.backlog() + ", " + d.health());
                assertThat(poison(broker)).containsExactly("p1", "p2");
            }

            // Round 2: p3 is parked, a new leader keeps the hold, a replay sends p3 first.
            InMemoryBroker second = broker(rejecting);
            publish(pool, store, List.of(msg("poison", "p3"), msg("poison", "p4")));
            try (Dispatcher d = Dispatcher.builder(store, second).config(config).name("pg-hold-2").build()) {
                d.start();
                Await.untilOrFail(() -> store.parkedCount() == 1, WAIT, () -> "parked " + store.parkedCount());
            }
            InMemoryBroker third = broker(rejecting);
            try (Dispatcher d = Dispatcher.builder(store, third).config(config).name("pg-hold-3").build()) {
                d.start();
                publish(pool, store, List.of(msg("poison", "p5")));
                publishHealthy(pool, store, 2);
                Await.untilOrFail(() -> healthy(third) == KEYS && d.health().heldKeys() == 1, WAIT,
                        () -> "healthy " + healthy(third) + ", " + d.health());
                assertThat(poison(third)).as("the new leader holds the key from the parked table").isEmpty();
                Await.untilOrFail(() -> store.backlog() == 2, WAIT, () -> "p4 and p5 wait: backlog " + store.backlog());

                rejecting.set(false);
                assertThat(store.replay(ids(store.parked(10)))).isEqualTo(1);
                Await.untilOrFail(() -> store.backlog() == 0 && d.health().heldKeys() == 0, WAIT,
                        () -> "released: backlog " + store.backlog() + ", " + d.health());
                assertThat(poison(third)).as("the replayed record first, then the held ones in order")
                        .containsExactly("p3", "p4", "p5");
            }
            assertThat(store.parkedCount()).isZero();
            assertHealthyInOrder(List.of(broker, second, third));
        }
    }

    private static InMemoryBroker broker(AtomicBoolean rejecting) {
        // Only the heads p0 and p3 are poison, while rejecting is on (the operator fixes p3's cause before replaying).
        return InMemoryBroker.builder().faults(r -> rejecting.get() && r.key().equals("poison")
                && (value(r).equals("p0") || value(r).equals("p3")) ? BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_PERMANENT) : BrokerFaults.Fault.ACK).build();
    }

    private static OutboxMessage msg(String key, String value) {
        return OutboxMessage.of("t", key, value);
    }

    private static void publish(HikariDataSource pool, PostgresStore store, List<OutboxMessage> messages)
            throws Exception {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, messages);
            c.commit();
        }
    }

    private static void publishHealthy(HikariDataSource pool, PostgresStore store, int round) throws Exception {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            batch.add(msg("k" + k, String.valueOf(round)));
        }
        publish(pool, store, batch);
    }

    private static List<Long> ids(List<ParkedRecord> parked) {
        return parked.stream().map(ParkedRecord::id).toList();
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    private static int healthy(InMemoryBroker broker) {
        return (int) broker.delivered().stream().filter(r -> !r.key().equals("poison")).count();
    }

    private static List<String> poison(InMemoryBroker broker) {
        return broker.delivered().stream().filter(r -> r.key().equals("poison")).map(PostgresHoldKeyTest::value)
                .toList();
    }

    private static void assertHealthyInOrder(List<InMemoryBroker> brokers) {
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (InMemoryBroker b : brokers) {
            for (OutboxRecord r : b.delivered()) {
                if (!r.key().equals("poison")) {
                    byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(value(r)));
                }
            }
        }
        assertThat(byKey).hasSize(KEYS).allSatisfy((k, values) -> assertThat(values).containsExactly(0, 1, 2));
    }
}
