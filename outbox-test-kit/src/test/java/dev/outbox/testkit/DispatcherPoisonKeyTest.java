package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One poison record among 1,000 healthy keys: it holds only its own key. The dispatcher's clock stands still
 * while the test does not move it, so the poison record cannot be retried before the test says so; that every
 * healthy record is delivered meanwhile shows, by counting rather than timing, that no other key waits for it.
 * Then the clock moves past each backoff: the record is retried, parked after {@code maxAttempts}, and its key's
 * later records flow, in order.
 */
class DispatcherPoisonKeyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int HEALTHY_KEYS = 1_000;
    private static final int PER_KEY = 2;
    private static final Duration BACKOFF = Duration.ofSeconds(10);

    @Test
    void aPoisonRecordHoldsOnlyItsKeyIsParkedAfterMaxAttemptsAndItsKeyThenFlowsInOrder() {
        ManualClock clock = new ManualClock();
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> r.key().equals("poison") && value(r).equals("p0")
                ? Fault.of(Outcome.FAIL_RETRIABLE) : Fault.ACK).build();
        List<ParkedRecord> parked = new CopyOnWriteArrayList<>();
        AtomicInteger refreshed = new AtomicInteger();
        DispatcherListener listener = new DispatcherListener() {
            @Override
            public void recordParked(ParkedRecord record) {
                parked.add(record);
            }

            @Override
            public void leaderRefreshed(UUID leaderId) {
                refreshed.incrementAndGet();
            }
        };
        try (InMemoryStore.Transaction tx = store.begin()) {
            tx.write(OutboxMessage.of("t", "poison", "p0"));
            tx.write(OutboxMessage.of("t", "poison", "p1"));
            tx.write(OutboxMessage.of("t", "poison", "p2"));
            for (int i = 0; i < HEALTHY_KEYS * PER_KEY; i++) {
                tx.write(OutboxMessage.of("t", "k" + (i % HEALTHY_KEYS), String.valueOf(i)));
            }
            tx.commit();
        }
        DispatcherConfig config = DispatcherConfig.builder()
                .markBatchSize(100)
                .maxInFlightRecords(500)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                // The test moves the clock by whole backoffs: the lease must outlast those jumps.
                .heartbeatTimeout(Duration.ofHours(1))
                .ioErrorBackoff(BACKOFF)
                .maxIoErrorBackoff(BACKOFF)
                .maxAttempts(3)
                .build();
        try (Dispatcher d = Dispatcher.builder(store, broker).config(config).clock(clock).listener(listener)
                .name("poison").build()) {
            d.start();
            // The clock stands still: the poison record failed once and cannot be retried, yet every healthy
            // record is delivered.
            Await.untilOrFail(() -> healthy(broker) == HEALTHY_KEYS * PER_KEY && broker.failureCount() == 1, WAIT,
                    () -> "healthy delivered " + healthy(broker) + ", failures " + broker.failureCount());
            assertThat(poison(broker)).as("the poison key's later records wait behind its head").isEmpty();
            InMemoryStore.Row head = store.rows().get(0);
            assertThat(head.attempts()).isEqualTo(1);
            assertThat(head.nextAttemptAt()).as("the retry time is kept on the row for a new leader")
                    .isAfterOrEqualTo(clock.instant().plus(BACKOFF.dividedBy(2)))
                    .isBeforeOrEqualTo(clock.instant().plus(BACKOFF));

            clock.advance(BACKOFF);
            // The broker counts the failure before the dispatcher records it on the row: wait for both.
            Await.untilOrFail(() -> broker.failureCount() == 2 && store.rows().get(0).attempts() == 2, WAIT,
                    () -> "second failure: " + broker + ", head " + store.rows().get(0));
            assertThat(poison(broker)).isEmpty();

            clock.advance(BACKOFF.multipliedBy(2));
            Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "drained: " + store.rows());
        }
        assertThat(broker.failureCount()).isEqualTo(3);
        assertThat(parked).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("poison");
            assertThat(p.attempts()).isEqualTo(3);
        });
        assertThat(store.parkedRows()).as("the parked row counts every failed delivery, as the listener does")
                .singleElement().satisfies(p -> assertThat(p.attempts()).isEqualTo(3));
        assertThat(poison(broker)).as("the poison key's later records, in order, once its head was parked")
                .containsExactly("p1", "p2");
        assertThat(healthy(broker)).as("each healthy record once").isEqualTo(HEALTHY_KEYS * PER_KEY);
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (OutboxRecord r : broker.delivered()) {
            if (!r.key().equals("poison")) {
                byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(value(r)));
            }
        }
        assertThat(byKey).hasSize(HEALTHY_KEYS).allSatisfy((k, values) -> assertThat(values).isSorted());
        assertThat(refreshed).as("no global rewind").hasValue(0);
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    private static int healthy(InMemoryBroker broker) {
        return (int) broker.delivered().stream().filter(r -> !r.key().equals("poison")).count();
    }

    private static List<String> poison(InMemoryBroker broker) {
        return broker.delivered().stream().filter(r -> r.key().equals("poison")).map(
                DispatcherPoisonKeyTest::value).toList();
    }

    /** A clock that stands still until the test moves it. Thread-safe. */
    private static final class ManualClock extends Clock {
        private volatile Instant now = Instant.parse("2026-01-01T00:00:00Z");

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
