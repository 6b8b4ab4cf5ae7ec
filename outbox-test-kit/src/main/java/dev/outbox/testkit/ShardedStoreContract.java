package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxShards;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.spi.Store;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a sharded store must do ({@link Store#shards()} &gt; 1, see {@link Store#shard}), for every store that can be
 * sharded, beside the {@link StoreContract} it passes unsharded: a shard's view marks, reads, counts and dates only
 * the shard's rows; purge, reset, failure records and parking act by id across shards; each shard fences with an
 * epoch of its own; parked rows and the publisher are the whole outbox's.
 *
 * <pre>{@code
 * class PostgresShardedStoreContractTest extends ShardedStoreContract {
 *     protected Store createStore(int shards) { ... a store with fencing over a fresh table of that many shards ... }
 *     protected TestTransaction begin(Store store) { return JdbcTestTransaction.begin(dataSource, store.publisher()); }
 * }
 * }</pre>
 *
 * <p>Each test gets a fresh store of {@value #SHARDS} shards and hands it to {@link #disposeStore(Store)} afterwards;
 * each is bounded by a timeout. The data is small: the whole contract takes a second or two on a real database.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class ShardedStoreContract {
    /** The shard count of the stores under test. */
    protected static final int SHARDS = 4;
    private static final String TOPIC = "outbox-sharded-contract";

    /** The store under test in the current test: {@value #SHARDS} shards, storage fencing on. */
    protected Store store;

    /**
     * A fresh store with storage fencing on over an empty outbox of {@code shards} shards. Called before each test.
     *
     * @param shards the shard count, {@value #SHARDS}
     * @return the store under test, whose {@code shards()} is {@code shards}, over an outbox no other test uses
     */
    protected abstract Store createStore(int shards);

    /**
     * Begins an application transaction whose messages {@code store}'s publisher writes.
     *
     * @param store the store under test (the whole outbox, not a shard's view)
     * @return a new open transaction; the suite commits, rolls back or closes it
     */
    protected abstract TestTransaction begin(Store store);

    /**
     * Releases what {@link #createStore(int)} created. Called after each test. Default: nothing.
     *
     * @param store the store {@link #createStore(int)} returned for the test
     */
    protected void disposeStore(Store store) {
    }

    @BeforeEach
    final void createFreshStore() {
        store = createStore(SHARDS);
        assertThat(store.shards()).as("createStore(%d).shards()", SHARDS).isEqualTo(SHARDS);
    }

    @AfterEach
    final void disposeFreshStore() {
        if (store != null) {
            disposeStore(store);
        }
    }

    /** Two keys per shard, found by {@link OutboxShards#shardOf}: {@code keys.get(shard)}. */
    private static List<List<String>> keysByShard() {
        List<List<String>> keys = new ArrayList<>();
        for (int s = 0; s < SHARDS; s++) {
            keys.add(new ArrayList<>());
        }
        for (int i = 0; keys.stream().anyMatch(k -> k.size() < 2); i++) {
            String key = "key-" + i;
            List<String> of = keys.get(OutboxShards.shardOf(key, SHARDS));
            if (of.size() < 2) {
                of.add(key);
            }
        }
        return keys;
    }

    /** Commits three messages for each key given, interleaved across keys; returns them by id as marked whole. */
    private List<OutboxRecord> commit(List<String> keys) {
        try (TestTransaction tx = begin(store)) {
            for (int round = 0; round < 3; round++) {
                for (String key : keys) {
                    tx.publish(OutboxMessage.of(TOPIC, key, key + "#" + round));
                }
            }
            tx.commit();
        }
        return store.read(0, List.of(), 10_000).rows().records();
    }

    private static List<String> all(List<List<String>> keys) {
        return keys.stream().flatMap(List::stream).collect(Collectors.toList());
    }

    private static List<Long> ids(List<OutboxRecord> records) {
        return records.stream().map(OutboxRecord::id).collect(Collectors.toList());
    }

    @Test
    void aShardsViewMarksAndReadsOnlyItsRowsInIdOrder() {
        List<OutboxRecord> rows = commit(all(keysByShard()));
        assertThat(rows).hasSize(SHARDS * 2 * 3);
        long last = rows.get(rows.size() - 1).id();
        List<Long> seen = new ArrayList<>();
        for (int s = 0; s < SHARDS; s++) {
            int shard = s;
            List<Long> expected = ids(rows.stream().filter(r -> OutboxShards.shardOf(r.key(), SHARDS) == shard)
                    .collect(Collectors.toList()));
            Store view = store.shard(s);
            assertThat(view.shards()).as("a shard's view is one outbox").isEqualTo(1);
            assertThat(ids(view.read(0, List.of(), 100).rows().records())).as("read of shard %d", s)
                    .containsExactlyElementsOf(expected);
            assertThat(ids(view.read(0, List.of(), 2).rows().records())).as("the limit counts the shard's rows")
                    .containsExactlyElementsOf(expected.subList(0, 2));
            assertThat(ids(view.read(last, List.of(new IdRange(1, last)), 100).rows().records()))
                    .as("a recheck range of shard %d", s).containsExactlyElementsOf(expected);
            List<OutboxRecord> marked = view.mark(UUID.randomUUID(), 100).records();
            assertThat(ids(marked)).as("mark of shard %d", s).containsExactlyElementsOf(expected);
            assertThat(marked).allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), SHARDS)).isEqualTo(shard));
            seen.addAll(expected);
        }
        assertThat(seen).as("every row is in exactly one shard").containsExactlyInAnyOrderElementsOf(ids(rows));
    }

    @Test
    void purgeResetRetryLaterAndParkActByIdWhateverTheShard() {
        List<List<String>> keys = keysByShard();
        List<OutboxRecord> rows = commit(all(keys));
        Map<Integer, List<OutboxRecord>> byShard = rows.stream()
                .collect(Collectors.groupingBy(r -> OutboxShards.shardOf(r.key(), SHARDS)));
        Store zero = store.shard(0);
        UUID leader = UUID.randomUUID();

        zero.purge(ids(byShard.get(1)));
        zero.park(Map.of(byShard.get(2).get(0).id(), "poison"));
        zero.retryLater(Map.of(byShard.get(3).get(0).id(), java.time.Instant.now().plusSeconds(60)));
        OutboxRecord marked = store.shard(3).mark(leader, 1).records().get(0);
        zero.reset(leader, List.of(marked.id()));

        assertThat(store.shard(1).backlog()).as("shard 1's rows purged through shard 0's view").isZero();
        assertThat(store.shard(1).read(0, List.of(), 100).rows().records()).isEmpty();
        assertThat(store.parkedCount()).isEqualTo(1);
        assertThat(zero.parkedCount()).as("parked rows are the whole outbox's").isEqualTo(1);
        assertThat(zero.parked(10)).extracting(p -> p.id()).containsExactly(byShard.get(2).get(0).id());
        OutboxRecord retried = store.shard(3).read(0, List.of(), 100).rows().records().stream()
                .filter(r -> r.id() == byShard.get(3).get(0).id()).findFirst().orElseThrow();
        assertThat(retried.attempts()).as("failure record and reset each count an attempt").isEqualTo(2);
        assertThat(retried.nextAttemptAt()).isNotNull();
        assertThat(store.shard(2).replay(List.of(byShard.get(2).get(0).id()))).isEqualTo(1);
        assertThat(store.shard(2).read(0, List.of(), 100).rows().records()).extracting(OutboxRecord::key)
                .as("the replayed row is back in its key's shard").hasSize(byShard.get(2).size());
        assertThat(store.shard(2).publisher()).as("the publisher is the whole outbox's").isNotNull();
    }

    @Test
    void eachShardFencesWithAnEpochOfItsOwn() {
        List<OutboxRecord> rows = commit(all(keysByShard()));
        Map<Integer, List<OutboxRecord>> byShard = rows.stream()
                .collect(Collectors.groupingBy(r -> OutboxShards.shardOf(r.key(), SHARDS)));
        long zeroEpoch = store.shard(0).acquireEpoch();
        long oneEpoch = store.shard(1).acquireEpoch();
        Store zero = store.shard(0).fencedBy(zeroEpoch);
        Store one = store.shard(1).fencedBy(oneEpoch);

        long newer = store.shard(1).acquireEpoch();
        assertThat(newer).isGreaterThan(oneEpoch);
        zero.purge(List.of(byShard.get(0).get(0).id()));
        assertThat(zero.mark(UUID.randomUUID(), 100).records())
                .as("shard 1's new epoch does not fence shard 0's leader").hasSize(byShard.get(0).size() - 1);
        assertThatThrownBy(() -> one.purge(List.of(byShard.get(1).get(0).id())))
                .as("shard 1's deposed leader").isInstanceOf(StoreFencedException.class);
        assertThatThrownBy(() -> one.mark(UUID.randomUUID(), 100)).isInstanceOf(StoreFencedException.class);
        assertThat(store.shard(1).backlog()).as("the refused purge changed nothing").isEqualTo(byShard.get(1).size());
        store.shard(1).fencedBy(newer).purge(List.of(byShard.get(1).get(0).id()));
        assertThat(store.shard(1).backlog()).isEqualTo(byShard.get(1).size() - 1);

        store.shard(0).acquireEpoch();
        assertThatThrownBy(() -> zero.park(Map.of(byShard.get(0).get(1).id(), "late")))
                .as("shard 0's own new epoch fences it").isInstanceOf(StoreFencedException.class);
        assertThat(store.parkedCount()).isZero();
    }

    @Test
    void backlogAndOldestCreateTimeArePerShard() throws InterruptedException {
        List<List<String>> keys = keysByShard();
        commit(keys.get(2));
        List<OutboxRecord> later = commit(keys.get(1));
        assertThat(store.backlog()).isEqualTo(12);
        assertThat(store.shard(0).backlog()).isZero();
        assertThat(store.shard(0).oldestCreateTime()).isEmpty();
        assertThat(store.shard(3).oldestCreateTime()).isEmpty();
        assertThat(store.shard(1).backlog()).isEqualTo(6);
        assertThat(store.shard(2).backlog()).isEqualTo(6);
        OutboxRecord firstOfOne = later.stream().filter(r -> OutboxShards.shardOf(r.key(), SHARDS) == 1)
                .min(Comparator.comparingLong(OutboxRecord::id)).orElseThrow();
        assertThat(store.shard(1).oldestCreateTime()).contains(firstOfOne.createdAt());
        assertThat(store.shard(2).oldestCreateTime()).isEqualTo(store.oldestCreateTime());
    }

    @Test
    void shardIndicesOutsideTheCountAreRefusedNamingThem() {
        assertThatThrownBy(() -> store.shard(SHARDS)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Integer.toString(SHARDS));
        assertThatThrownBy(() -> store.shard(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1");
    }
}
