package dev.outbox.testkit;

import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreFencedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@link Store} port's writes by id, as a leader settles what it marked: {@code purge}, {@code reset} and
 * {@code retryLater} of id batches (empty batches, unknown ids, rows of another leader), and storage fencing of
 * those writes and the mark ({@link dev.outbox.spi.StorageFencing}). One link of {@link StoreContract}'s chain: a
 * store runs it by extending {@link StoreContract}, which says why a chain.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class StoreWritesContract extends StoreContractSupport {
    // ---- purge --------------------------------------------------------------------------------------------

    @Test
    void purgeDeletesTheGivenRowsWhoeverMarkedThemAndIgnoresUnknownIds() {
        for (int i = 0; i < 5; i++) {
            commit(msg("k" + i, "v" + i));
        }
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();

        store.purge(List.of(marked.get(0).id(), marked.get(2).id(), UNKNOWN_ID));

        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v1", "v3", "v4");
        // purging rows marked by another leader, or not marked at all, deletes them too
        commit(msg("k5", "v5"));
        List<Long> rest = ids(markAll(UUID.randomUUID()));
        store.purge(rest);
        assertThat(Capabilities.gauges(store).backlog()).isZero();
        assertThat(Capabilities.marking(store).mark(UUID.randomUUID(), 10).isEmpty()).isTrue();
    }

    @Test
    void purgeOfAnEmptyBatchOrOnlyUnknownIdsDoesNothing() {
        commit(msg("k", "v"));

        store.purge(List.of());
        store.purge(List.of(UNKNOWN_ID, UNKNOWN_ID + 1));

        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v");
    }

    // ---- reset --------------------------------------------------------------------------------------------

    @Test
    void resetCountsAnAttemptAndUnmarksTheRowsOfThatLeader() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();

        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id(), marked.get(1).id(), UNKNOWN_ID));

        List<OutboxRecord> again = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(again).extracting(OutboxRecord::id).containsExactly(marked.get(0).id(), marked.get(1).id());
        assertThat(again).extracting(OutboxRecord::attempts).containsExactly(1, 1);
        assertThat(again).extracting(OutboxRecord::message)
                .containsExactly(marked.get(0).message(), marked.get(1).message());

        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id()));
        assertThat(Capabilities.marking(store).mark(leader, 10).records()).extracting(OutboxRecord::attempts).containsExactly(2);
        assertThat(markAll(UUID.randomUUID())).extracting(OutboxRecord::attempts).containsExactly(2, 1, 0);
    }

    @Test
    void resetKeepsTheMarkOfAnotherLeaderButCountsTheAttempt() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID oldLeader = UUID.randomUUID();
        UUID newLeader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(oldLeader, 10).records();
        long stolenId = marked.get(0).id();
        assertThat(Capabilities.marking(store).mark(newLeader, 1).records()).extracting(OutboxRecord::id).containsExactly(stolenId);

        // the old leader learns that its sends of the first two rows failed
        Capabilities.marking(store).reset(oldLeader, List.of(stolenId, marked.get(1).id()));

        // the new leader's mark on the stolen row holds: it marks only the other two
        List<OutboxRecord> byNew = Capabilities.marking(store).mark(newLeader, 10).records();
        assertThat(byNew).extracting(OutboxRecord::id).containsExactly(marked.get(1).id(), marked.get(2).id());
        assertThat(byNew).extracting(OutboxRecord::attempts).containsExactly(1, 0);
        // the stolen row counted the attempt too
        OutboxRecord stolenRow = markAll(UUID.randomUUID()).get(0);
        assertThat(stolenRow.id()).isEqualTo(stolenId);
        assertThat(stolenRow.attempts()).isEqualTo(1);
    }

    @Test
    void resetOfAnUnmarkedRowCountsTheAttempt() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        long id = Capabilities.marking(store).mark(leader, 10).records().get(0).id();
        Capabilities.marking(store).reset(leader, List.of(id));

        Capabilities.marking(store).reset(leader, List.of(id));

        assertThat(Capabilities.marking(store).mark(leader, 10).records()).extracting(OutboxRecord::attempts).containsExactly(2);
    }

    @Test
    void resetOfAnEmptyBatchDoesNothing() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        assertThat(Capabilities.marking(store).mark(leader, 10).records()).hasSize(1);

        Capabilities.marking(store).reset(leader, List.of());

        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("the row is still marked").isTrue();
        assertThat(markAll(UUID.randomUUID())).extracting(OutboxRecord::attempts).containsExactly(0);
    }

    // ---- retryLater -----------------------------------------------------------------------------------------

    @Test
    void retryLaterCountsAnAttemptKeepsTheMarkAndRecordsTheNextAttemptTime() {
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        assertThat(marked).extracting(OutboxRecord::nextAttemptAt).containsOnlyNulls();
        Instant first = Instant.parse("2030-01-02T03:04:05.123456Z");
        Instant second = Instant.parse("2030-01-02T03:05:00.000001Z");
        Map<Long, Instant> failed = new HashMap<>();
        failed.put(marked.get(0).id(), first);
        failed.put(marked.get(2).id(), second);
        failed.put(UNKNOWN_ID, first);

        store.retryLater(failed);

        assertThat(Capabilities.marking(store).mark(leader, 10).isEmpty()).as("the rows keep their leader's mark").isTrue();
        List<OutboxRecord> byNewLeader = markAll(UUID.randomUUID());
        assertThat(byNewLeader).extracting(OutboxRecord::attempts).containsExactly(1, 0, 1);
        assertThat(byNewLeader).extracting(OutboxRecord::nextAttemptAt).containsExactly(first, null, second);
        assertThat(byNewLeader).extracting(OutboxRecord::message)
                .containsExactlyElementsOf(marked.stream().map(OutboxRecord::message).toList());

        store.retryLater(Map.of(marked.get(0).id(), second));
        OutboxRecord again = markAll(UUID.randomUUID()).get(0);
        assertThat(again.attempts()).isEqualTo(2);
        assertThat(again.nextAttemptAt()).isEqualTo(second);
    }

    @Test
    void retryLaterOfAnEmptyMapDoesNothingAndANullIdOrTimeIsRejected() {
        commit(msg("a", "1"));
        UUID leader = UUID.randomUUID();
        long id = Capabilities.marking(store).mark(leader, 10).records().get(0).id();

        store.retryLater(Map.of());
        Map<Long, Instant> nullTime = new HashMap<>();
        nullTime.put(id, null);
        assertThatThrownBy(() -> store.retryLater(nullTime)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(id));
        Map<Long, Instant> nullId = new HashMap<>();
        nullId.put(null, Instant.parse("2030-01-01T00:00:00Z"));
        assertThatThrownBy(() -> store.retryLater(nullId)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("null id");

        OutboxRecord row = markAll(UUID.randomUUID()).get(0);
        assertThat(row.attempts()).isZero();
        assertThat(row.nextAttemptAt()).isNull();
    }

    // ---- storage fencing ------------------------------------------------------------------------------------

    /**
     * A store that fences passes the fencing cases below; one that does not says so and refuses to take an epoch or
     * a fenced view, rather than pretending to fence.
     */
    @Test
    void aStoreThatDoesNotFenceRefusesToTakeAnEpoch() {
        if (store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            long first = Capabilities.fencing(store).acquireEpoch();
            assertThat(first).as("the first epoch").isPositive();
            assertThat(Capabilities.fencing(store).acquireEpoch()).as("each acquisition increments the epoch").isEqualTo(first + 1);
        } else {
            assertThatThrownBy(() -> Capabilities.fencing(store).acquireEpoch()).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> Capabilities.fencing(store).fencedBy(1)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void writesFencedByTheCurrentEpochWorkAsUnfencedOnes() {
        if (!store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            return; // aStoreThatDoesNotFenceRefusesToTakeAnEpoch covers it
        }
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"), msg("d", "4"));
        Store leader = Capabilities.fencing(store).fencedBy(Capabilities.fencing(store).acquireEpoch());
        UUID id = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(leader).mark(id, 10).records();
        assertThat(marked).extracting(this::valueOf).containsExactly("1", "2", "3", "4");
        Instant later = Instant.parse("2030-01-02T03:04:05Z");

        leader.retryLater(Map.of(marked.get(1).id(), later, UNKNOWN_ID, later));
        Capabilities.marking(leader).reset(id, List.of(marked.get(2).id(), UNKNOWN_ID));
        leader.park(Map.of(marked.get(3).id(), "poison", UNKNOWN_ID, "unknown"));
        leader.purge(List.of(marked.get(0).id(), UNKNOWN_ID));
        leader.purge(List.of());

        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::id).containsExactly(marked.get(3).id());
        List<OutboxRecord> left = markAll(UUID.randomUUID());
        assertThat(left).extracting(this::valueOf).containsExactly("2", "3");
        assertThat(left).extracting(OutboxRecord::attempts).containsExactly(1, 1);
        assertThat(left.get(0).nextAttemptAt()).isEqualTo(later);
        assertThat(Capabilities.marking(leader).mark(UUID.randomUUID(), 10).records()).as("a fenced mark by the current epoch")
                .extracting(this::valueOf).containsExactly("2", "3");
    }

    @Test
    void writesFencedByAnEarlierEpochChangeNothingAndAreRefusedAsFenced() {
        if (!store.capability(dev.outbox.spi.StorageFencing.class).isPresent()) {
            return; // aStoreThatDoesNotFenceRefusesToTakeAnEpoch covers it
        }
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        long old = Capabilities.fencing(store).acquireEpoch();
        Store deposed = Capabilities.fencing(store).fencedBy(old);
        UUID oldId = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(deposed).mark(oldId, 10).records();
        assertThat(marked).hasSize(3);
        long current = Capabilities.fencing(store).acquireEpoch();
        assertThat(current).isGreaterThan(old);
        List<Long> ids = ids(marked);
        Instant later = Instant.parse("2030-01-02T03:04:05Z");

        assertFenced(() -> deposed.purge(ids), old, current);
        assertFenced(() -> deposed.purge(List.of(UNKNOWN_ID)), old, current);
        assertFenced(() -> deposed.retryLater(Map.of(ids.get(0), later)), old, current);
        assertFenced(() -> Capabilities.marking(deposed).reset(oldId, ids), old, current);
        assertFenced(() -> deposed.park(Map.of(ids.get(1), "poison")), old, current);
        commit(msg("e", "5"));
        assertFenced(() -> Capabilities.marking(deposed).mark(UUID.randomUUID(), 10), old, current);

        assertThat(Capabilities.parkedRecords(store).parked(10)).as("nothing parked").isEmpty();
        List<OutboxRecord> rows = Capabilities.marking(Capabilities.fencing(store).fencedBy(current)).mark(UUID.randomUUID(), 10).records();
        assertThat(rows).as("every row still there, as it was").extracting(this::valueOf)
                .containsExactly("1", "2", "3", "5");
        assertThat(rows).extracting(OutboxRecord::attempts).containsOnly(0);
        assertThat(rows).extracting(OutboxRecord::nextAttemptAt).containsOnlyNulls();
        assertThat(markAll(oldId)).as("the deposed leader's mark of row 5 did not happen either")
                .extracting(this::valueOf).containsExactly("1", "2", "3", "5");
    }

    private static void assertFenced(Runnable write, long epoch, long current) {
        assertThatThrownBy(write::run).isInstanceOfSatisfying(StoreFencedException.class, e -> {
            assertThat(e.epoch()).isEqualTo(epoch);
            assertThat(e.currentEpoch()).isEqualTo(current);
            assertThat(e.isRetriable()).isFalse();
        });
    }
}
