package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Failure;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InMemoryStoreTest {
    private static final String TOPIC = "t";
    private final InMemoryStore store = new InMemoryStore();

    private static OutboxMessage msg(String key, String value) {
        return OutboxMessage.of(TOPIC, key, value);
    }

    @Test
    void transactionsTakeIdsWhenTheyWriteAndRolledBackIdsBecomeGaps() {
        InMemoryStore.Transaction first = store.begin();
        InMemoryStore.Transaction second = store.begin();
        long a = first.write(msg("k", "a"));
        long b = second.write(msg("k", "b"));
        second.publish(List.of(msg("k", "c"), msg("k", "d")));
        InMemoryStore.Transaction rolledBack = store.begin();
        long e = rolledBack.write(msg("k", "e"));

        assertThat(List.of(a, b, e)).isSorted();
        assertThat(second.ids()).containsExactly(b, b + 1, b + 2);
        assertThat(store.size()).isZero();
        second.commit();
        rolledBack.rollback();
        assertThat(store.rows()).extracting(InMemoryStore.Row::id).containsExactly(b, b + 1, b + 2);
        first.commit();
        assertThat(store.rows()).extracting(InMemoryStore.Row::id).containsExactly(a, b, b + 1, b + 2);
        store.publisher().publish(null, msg("k", "f"));
        assertThat(store.rows().get(4).id()).as("the rolled-back id is a gap").isGreaterThan(e);
    }

    @Test
    void anEndedTransactionRefusesMoreWork() {
        InMemoryStore.Transaction tx = store.begin();
        tx.commit();

        assertThatThrownBy(() -> tx.publish(msg("k", "v"))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ended");
        assertThatThrownBy(tx::commit).isInstanceOf(IllegalStateException.class);
        tx.close();
    }

    @Test
    void publisherIgnoresTheConnectionAndWritesNothingWhenAMessageIsNull() {
        assertThatThrownBy(() -> store.publisher().publish(null, Arrays.asList(msg("k", "1"), null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("message at index 1 of 2 is null");
        assertThat(store.size()).isZero();

        store.publisher().publish(null, List.of(msg("k", "1"), msg("k", "2")));

        assertThat(store.rows()).extracting(InMemoryStore.Row::key).containsExactly("k", "k");
    }

    @Test
    void timestampsComeFromTheClock() {
        Instant now = Instant.parse("2030-01-02T03:04:05Z");
        InMemoryStore timed = new InMemoryStore(Clock.fixed(now, ZoneOffset.UTC));
        timed.publisher().publish(null, msg("k", "v"));
        OutboxRecord record = timed.mark(UUID.randomUUID(), 1).records().get(0);

        timed.park(Map.of(record.id(), "why"));

        assertThat(record.createdAt()).isEqualTo(now);
        assertThat(timed.parkedRows()).containsExactly(new ParkedRecord(record.id(), TOPIC, "k", 0, "why", now));
    }

    @Test
    void inspectionShowsLeadersAttemptsAndMalformedRows() {
        store.publisher().publish(null, List.of(msg("a", "1"), msg("b", "2")));
        long bad = store.insertMalformed(null, null, "no topic");
        UUID leader = UUID.randomUUID();
        var marked = store.mark(leader, 2).records();
        store.reset(leader, List.of(marked.get(1).id()));

        assertThat(store.rows()).containsExactly(
                new InMemoryStore.Row(marked.get(0).id(), TOPIC, "a", leader, 0, false),
                new InMemoryStore.Row(marked.get(1).id(), TOPIC, "b", null, 1, false),
                new InMemoryStore.Row(bad, null, null, null, 0, true));
        assertThat(store.size()).isEqualTo(3);
        assertThat(store.mark(leader, 10).rejected()).singleElement()
                .satisfies(r -> assertThat(r.reason()).isEqualTo("no topic"));
        assertThat(store.calls(Operation.MARK)).isEqualTo(2);
        assertThat(store.calls(Operation.RESET)).isEqualTo(1);
        store.purge(List.of(marked.get(0).id(), marked.get(0).id()));
        assertThat(store.purgedRows()).isEqualTo(1);
    }

    @Test
    void aFailureBeforeChangesNothing() {
        store.publisher().publish(null, List.of(msg("a", "1"), msg("b", "2")));
        store.setFaults(op -> Fault.failBefore());
        UUID leader = UUID.randomUUID();

        assertThatThrownBy(() -> store.mark(leader, 10)).isInstanceOfSatisfying(StoreException.class,
                e -> assertThat(e.isRetriable()).isTrue()).hasMessageContaining("MARK");
        assertThat(store.rows()).extracting(InMemoryStore.Row::leaderId).containsOnlyNulls();
        List<Long> ids = store.rows().stream().map(InMemoryStore.Row::id).toList();
        assertThatThrownBy(() -> store.purge(ids)).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.reset(leader, ids)).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.park(Map.of(ids.get(0), "x"))).isInstanceOf(StoreException.class);
        assertThat(store.rows()).extracting(InMemoryStore.Row::attempts).containsOnly(0);
        assertThat(store.size()).isEqualTo(2);
        assertThat(store.injectedFailures(Operation.MARK)).isEqualTo(1);
        assertThat(store.injectedFailures(Operation.PURGE)).isEqualTo(1);

        store.setFaults(StoreFaults.none());
        assertThat(store.mark(leader, 10).records()).hasSize(2);
    }

    @Test
    void aFailureAfterAppliesTheChangeButReportsAFailure() {
        store.publisher().publish(null, List.of(msg("a", "1"), msg("b", "2"), msg("c", "3"), msg("d", "4")));
        store.setFaults(op -> Fault.failAfter());
        UUID leader = UUID.randomUUID();

        assertThatThrownBy(() -> store.mark(leader, 10)).isInstanceOfSatisfying(StoreException.class,
                e -> assertThat(e.isRetriable()).isTrue()).hasMessageContaining("lost commit acknowledgement");
        assertThat(store.rows()).extracting(InMemoryStore.Row::leaderId).containsOnly(leader);
        List<Long> ids = store.rows().stream().map(InMemoryStore.Row::id).toList();
        assertThatThrownBy(() -> store.reset(leader, List.of(ids.get(0)))).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.purge(List.of(ids.get(1)))).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.park(Map.of(ids.get(2), "x"))).isInstanceOf(StoreException.class);

        assertThat(store.rows()).containsExactly(new InMemoryStore.Row(ids.get(0), TOPIC, "a", null, 1, false),
                new InMemoryStore.Row(ids.get(3), TOPIC, "d", leader, 0, false));
        assertThat(store.parkedRows()).extracting(ParkedRecord::id).containsExactly(ids.get(2));
        store.setFaults(StoreFaults.none());
        assertThat(store.mark(leader, 10).records()).as("the same leader id gets only the reset row")
                .extracting(OutboxRecord::id).containsExactly(ids.get(0));
    }

    @Test
    void aScriptedPlanFailsExactlyTheCallItChooses() {
        store.publisher().publish(null, msg("a", "1"));
        AtomicInteger marks = new AtomicInteger();
        store.setFaults(op -> op == Operation.MARK && marks.incrementAndGet() == 2 ? Fault.failBefore() : Fault.NONE);

        store.mark(UUID.randomUUID(), 1);
        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 1)).isInstanceOf(StoreException.class);
        store.mark(UUID.randomUUID(), 1);

        assertThat(store.calls(Operation.MARK)).isEqualTo(3);
        assertThat(store.injectedFailures(Operation.MARK)).isEqualTo(1);
    }

    @Test
    void aDelayStallsTheCall() {
        store.setFaults(op -> Fault.delay(Duration.ofMillis(50)));

        long start = System.nanoTime();
        store.backlog();

        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(50));
        assertThat(store.injectedFailures(Operation.BACKLOG)).isZero();
    }

    @Test
    void aRandomPlanIsDeterminedByItsSeedAndHonoursItsProbabilities() {
        long seed = 42;
        StoreFaults a = StoreFaults.random(seed).failBefore(0.2).failAfter(0.1).delay(0.5, Duration.ofMillis(3)).build();
        StoreFaults b = StoreFaults.random(seed).failBefore(0.2).failAfter(0.1).delay(0.5, Duration.ofMillis(3)).build();
        int before = 0;
        int after = 0;
        int delayed = 0;
        int n = 5_000;
        for (int i = 0; i < n; i++) {
            Operation op = i % 2 == 0 ? Operation.MARK : Operation.PURGE;
            Fault fa = a.decide(op);
            assertThat(fa).as("decision %d, seed %d", i, seed).isEqualTo(b.decide(op));
            before += fa.failure() == Failure.BEFORE ? 1 : 0;
            after += fa.failure() == Failure.AFTER ? 1 : 0;
            delayed += fa.delay().isZero() ? 0 : 1;
            assertThat(fa.delay()).isLessThanOrEqualTo(Duration.ofMillis(3));
        }
        assertThat(before).as("seed %d", seed).isBetween(n / 5 - 200, n / 5 + 200);
        assertThat(after).as("seed %d", seed).isBetween(n / 10 - 150, n / 10 + 150);
        assertThat(delayed).as("seed %d", seed).isBetween(n / 2 - 250, n / 2 + 250);
        assertThat(a.decide(Operation.BACKLOG)).as("operations not chosen run normally").isEqualTo(Fault.NONE);
        assertThat(a.decide(Operation.REPLAY)).isEqualTo(Fault.NONE);
    }

    @Test
    void aRandomPlanRejectsImpossibleProbabilities() {
        assertThatThrownBy(() -> StoreFaults.random(1).failBefore(1.5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("failBefore").hasMessageContaining("1.5");
        assertThatThrownBy(() -> StoreFaults.random(1).failAfter(Double.NaN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NaN");
        assertThatThrownBy(() -> StoreFaults.random(1).failBefore(0.6).failAfter(0.6).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0.6 + 0.6");
        assertThatThrownBy(() -> Fault.delay(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT-0.001S");
    }

    @Test
    void markAndParkedRejectBadArguments() {
        assertThatThrownBy(() -> store.mark(null, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaderId");
        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), -3)).hasMessageContaining("-3");
        assertThatThrownBy(() -> store.parked(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> store.reset(null, List.of())).hasMessageContaining("leaderId");
    }

    @Test
    void concurrentLeadersMarkingAndPurgingDeleteEveryRowExactlyOnce() throws Exception {
        int rows = 5_000;
        for (int i = 0; i < rows; i += 100) {
            List<OutboxMessage> batch = new ArrayList<>();
            for (int j = 0; j < 100; j++) {
                batch.add(msg("k" + (i + j) % 13, "v" + (i + j)));
            }
            store.publisher().publish(null, batch);
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                futures.add(pool.submit(() -> {
                    UUID leader = UUID.randomUUID();
                    while (store.size() > 0) {
                        List<Long> ids = store.mark(leader, 37).records().stream().map(OutboxRecord::id).toList();
                        store.purge(ids);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }

        assertThat(store.size()).isZero();
        assertThat(store.purgedRows()).isEqualTo(rows);
    }
}
