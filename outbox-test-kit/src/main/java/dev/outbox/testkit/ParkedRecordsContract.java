package dev.outbox.testkit;

import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@link dev.outbox.spi.Store} port's parked area: {@code park} of id batches takes rows out of the harvest, the
 * parked list ({@link dev.outbox.spi.ParkedRecords#parked(int)}) shows them oldest first with reason and attempts,
 * the parked count ({@link dev.outbox.spi.Gauges#parkedCount()}) counts them, {@code replay} puts them back at the
 * tail as new rows, and, for a store with {@link dev.outbox.spi.ParkedKeys}, a replayed key's rows go ahead of its
 * waiting rows. One link of {@link StoreContract}'s chain: a store runs it by extending {@link StoreContract}, which
 * says why a chain.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class ParkedRecordsContract extends StoreWritesContract {
    // ---- park and replay ------------------------------------------------------------------------------------

    @Test
    void parkedRowsAreNeverMarkedAndAreListedWithTheirReasonAndAttempts() {
        for (int i = 0; i < 4; i++) {
            commit(msg("k" + i, "v" + i));
        }
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        long parkedId = marked.get(1).id();
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        Instant before = Instant.now();

        store.park(Map.of(parkedId, "too large: 2000000 bytes", UNKNOWN_ID, "unknown"));
        Instant after = Instant.now();

        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(3);
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v0", "v2", "v3");
        assertThat(markAll(leader)).extracting(this::valueOf).as("not even for the leader that reset it")
                .containsExactly("v0", "v2", "v3");
        List<ParkedRecord> parked = Capabilities.parkedRecords(store).parked(10);
        assertThat(parked).hasSize(1);
        ParkedRecord p = parked.get(0);
        assertThat(p.id()).isEqualTo(parkedId);
        assertThat(p.topic()).isEqualTo(TOPIC);
        assertThat(p.key()).isEqualTo("k1");
        assertThat(p.attempts()).isEqualTo(2);
        assertThat(p.reason()).isEqualTo("too large: 2000000 bytes");
        if (p.parkedAt() != null) {
            assertThat(p.parkedAt()).isBetween(before.minus(CLOCK_SLACK), after.plus(CLOCK_SLACK));
        }
        // reset of a parked row does not bring it back
        Capabilities.marking(store).reset(leader, List.of(parkedId));
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v0", "v2", "v3");
    }

    @Test
    void parkOfAnEmptyBatchOrOnlyUnknownIdsDoesNothing() {
        commit(msg("k", "v"));

        store.park(Map.of());
        store.park(Map.of(UNKNOWN_ID, "unknown"));

        assertThat(Capabilities.parkedRecords(store).parked(10)).isEmpty();
        assertThat(markAll(UUID.randomUUID())).extracting(this::valueOf).containsExactly("v");
    }

    @Test
    void parkedListsTheOldestParkedRowsUpToTheLimit() {
        for (int i = 0; i < 6; i++) {
            commit(msg("k" + i, "v" + i));
        }
        List<OutboxRecord> marked = markAll(UUID.randomUUID());
        Map<Long, String> reasons = new HashMap<>();
        for (int i = 0; i < 5; i++) {
            reasons.put(marked.get(i).id(), "reason " + i);
        }

        store.park(reasons);

        assertThat(Capabilities.parkedRecords(store).parked(3)).extracting(ParkedRecord::id)
                .containsExactly(marked.get(0).id(), marked.get(1).id(), marked.get(2).id());
        assertThat(Capabilities.parkedRecords(store).parked(3)).extracting(ParkedRecord::reason)
                .containsExactly("reason 0", "reason 1", "reason 2");
        assertThat(Capabilities.parkedRecords(store).parked(100)).hasSize(5);
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(1);
    }

    @Test
    void replayPutsParkedRowsBackAtTheTailWithAttemptsZero() {
        OutboxMessage first = OutboxMessage.builder(TOPIC, "k1").value("v1").header("h", "x").header("h", "y")
                .build();
        commit(first);
        commit(msg("k2", "v2"));
        commit(msg("k3", "v3"));
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> marked = Capabilities.marking(store).mark(leader, 10).records();
        Capabilities.marking(store).reset(leader, List.of(marked.get(0).id()));
        store.park(Map.of(marked.get(0).id(), "reason-1", marked.get(1).id(), "reason-2"));
        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::attempts).containsExactly(1, 0);

        int replayed = Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id(), UNKNOWN_ID));

        assertThat(replayed).isEqualTo(1);
        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::id).containsExactly(marked.get(1).id());
        List<OutboxRecord> after = markAll(UUID.randomUUID());
        assertThat(after).hasSize(2);
        assertThat(after.get(0).id()).isEqualTo(marked.get(2).id());
        OutboxRecord back = after.get(1);
        assertThat(back.id()).as("a replayed row is a new row at the tail").isGreaterThan(marked.get(2).id());
        assertThat(back.message()).as("the parked message, marked as replayed with its parked id")
                .isEqualTo(first.withHeader(Header.of(KeySequence.REPLAYED, KeySequence.encode(marked.get(0).id()))));
        assertThat(back.attempts()).isZero();
        assertThat(Capabilities.parkedRecords(store).replay(List.of())).isZero();
        assertThat(Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id()))).as("replaying twice").isZero();
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(2);
    }

    /**
     * Held keys ({@code DispatcherConfig.AfterPark.HOLD_KEY}): {@link dev.outbox.spi.ParkedKeys#parkedKeys} lists the parked rows' keys,
     * and a replay puts a key's replayed rows ahead of the key's rows that waited in the outbox (they move behind,
     * new ids, same order, same message ids); other keys' rows stay where they are. Only for a store with that
     * capability.
     */
    @Test
    void replayPutsAKeysReplayedRowsAheadOfItsWaitingRowsAndParkedKeysListsTheParkedKeys() {
        if (store.capability(dev.outbox.spi.ParkedKeys.class).isEmpty()) {
            return; // an optional capability: a store without it is not asked
        }
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).isEmpty();
        commit(msg("a", "a0"));
        commit(msg("b", "b0"));
        List<OutboxRecord> heads = markAll(UUID.randomUUID());
        store.park(Map.of(heads.get(0).id(), "poison", heads.get(1).id(), "poison"));
        commit(msg("a", "a1"), msg("c", "c1"));
        commit(msg("a", "a2"));
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).containsExactlyInAnyOrder("a", "b");
        List<OutboxRecord> waiting = markAll(UUID.randomUUID());

        assertThat(Capabilities.parkedRecords(store).replay(List.of(heads.get(0).id()))).isEqualTo(1);

        assertThat(Capabilities.parkedKeys(store).parkedKeys()).containsExactly("b");
        List<OutboxRecord> after = markAll(UUID.randomUUID());
        assertThat(after).extracting(this::valueOf).as("c1 stays; a's replayed row, then its waiting rows")
                .containsExactly("c1", "a0", "a1", "a2");
        assertThat(after.get(0).id()).isEqualTo(waiting.get(1).id());
        assertThat(after.get(1).id()).isGreaterThan(waiting.get(2).id());
        assertThat(after.get(1).messageId()).isEqualTo(heads.get(0).messageId());
        assertThat(after.get(2).messageId()).as("a moved row keeps its message id").isEqualTo(waiting.get(0).messageId());
        assertThat(after.get(3).messageId()).isEqualTo(waiting.get(2).messageId());
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(4);
        Capabilities.parkedRecords(store).replay(List.of(heads.get(1).id()));
        assertThat(Capabilities.parkedKeys(store).parkedKeys()).isEmpty();
    }

    @Test
    void parkedCountCountsParkedRowsUntilTheyAreReplayed() {
        assertThat(Capabilities.gauges(store).parkedCount()).isZero();
        commit(msg("a", "1"), msg("b", "2"), msg("c", "3"));
        List<OutboxRecord> marked = Capabilities.marking(store).mark(UUID.randomUUID(), 3).records();
        assertThat(Capabilities.gauges(store).parkedCount()).as("marked rows are not parked").isZero();

        store.park(Map.of(marked.get(0).id(), "first", marked.get(2).id(), "third"));
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(2);
        Capabilities.parkedRecords(store).replay(List.of(marked.get(0).id()));
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(1);
    }
}
