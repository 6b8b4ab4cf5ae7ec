package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.internal.HarvestCursor;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Marks running against application transactions and against each other, on a real Postgres: per-key causal
 * order when ids are taken early and committed late, no blocking of writers, no uncommitted rows, and how two
 * leaders' marks meet.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresConcurrencyTest {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static DataSource admin;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        String url = PostgresTestSupport.database("outbox_concurrency");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "concurrency_store", 6);
        appPool = PostgresTestSupport.pool(url, "concurrency_app", 16);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    private static PostgresStore newStore() {
        PostgresStore store = PostgresStore.builder(storePool).table("conc_" + TABLES.incrementAndGet()).build();
        store.createSchema();
        return store;
    }

    private static Connection begin() throws SQLException {
        Connection c = appPool.getConnection();
        c.setAutoCommit(false);
        return c;
    }

    private static String valueOf(OutboxRecord record) {
        return new String(record.message().value(), StandardCharsets.UTF_8);
    }

    /**
     * T0 takes an id and stays open while T1 takes a higher id and commits: the mark sees T1's row only. When T0
     * commits, its rows appear behind the already marked row, and the next mark (which always starts from the
     * head of the table, with no offset) finds them, in order, before the key's later rows.
     */
    @Test
    void aTransactionThatTakesIdsEarlyAndCommitsLateIsMarkedInKeyOrder() throws SQLException {
        PostgresStore store = newStore();
        UUID leader = UUID.randomUUID();
        long otherId;
        try (Connection t0 = begin()) {
            store.publisher().publish(t0, OutboxMessage.of("orders", "k", "k-0"));
            try (Connection t1 = begin()) {
                store.publisher().publish(t1, OutboxMessage.of("orders", "other", "other-0"));
                t1.commit();
            }
            List<OutboxRecord> first = store.mark(leader, 100).records();
            assertThat(first).extracting(PostgresConcurrencyTest::valueOf).containsExactly("other-0");
            otherId = first.get(0).id();
            store.publisher().publish(t0, OutboxMessage.of("orders", "k", "k-1"));
            t0.commit();
        }
        try (Connection t2 = begin()) {
            store.publisher().publish(t2, OutboxMessage.of("orders", "k", "k-2"));
            t2.commit();
        }

        List<OutboxRecord> second = store.mark(leader, 100).records();

        assertThat(second).extracting(PostgresConcurrencyTest::valueOf).containsExactly("k-0", "k-1", "k-2");
        assertThat(second.get(0).id()).as("k-0 took its id before other-0").isLessThan(otherId);
        assertThat(second.get(1).id()).as("k-1 took its id after other-0").isGreaterThan(otherId);
    }

    /**
     * Writers commit transactions out of id order on purpose (each holds one transaction open while it writes
     * and commits another on different keys) while a marker marks and purges, as a dispatcher does. Each key
     * belongs to one writer, which writes it strictly after its previous write committed: the marker must see
     * every committed row exactly once, never a rolled-back one, never one whose commit had not begun, and each
     * key's rows in the order written.
     */
    @Test
    void lateCommitsNeverReorderAKeyAndNeverExposeUncommittedRows() throws Exception {
        PostgresStore store = newStore();
        UUID leader = UUID.randomUUID();
        harvestWhileWritersCommitLate(store, System.nanoTime(),
                random -> new Harvest(store.mark(leader, 1 + random.nextInt(40)).records(), true));
    }

    /**
     * The same writers, harvested by the cursor read as the dispatcher's CURSOR harvest does: a {@link HarvestCursor}
     * keeps the cursor and the gaps (ids passed unseen), rereads the gaps, and gives one up only when a read's
     * horizon says its writer has ended. Every committed row exactly once, never a rolled-back one, each key in the
     * order written, and no row returned twice.
     */
    @Test
    void lateCommitsNeverReorderAKeyAndNeverExposeUncommittedRowsToTheCursorRead() throws Exception {
        PostgresStore store = newStore();
        HarvestCursor cursor = new HarvestCursor(64);
        List<String> unexpected = new CopyOnWriteArrayList<>();
        harvestWhileWritersCommitLate(store, System.nanoTime(), random -> {
            HarvestCursor.Request request = cursor.request(1 + random.nextInt(40));
            ReadResult result = store.read(request.after(), request.recheck(), request.limit());
            HarvestCursor.Advance advance = cursor.advance(request, result);
            if (!advance.unexpected().isEmpty()) {
                unexpected.add("ids returned again: " + advance.unexpected() + " by " + request);
            }
            assertThat(result.rows().rejected()).isEmpty();
            return new Harvest(result.rows().records(), cursor.gaps().isEmpty());
        });
        assertThat(unexpected).isEmpty();
    }

    /** What one harvest step returned, and whether it holds nothing back (a cursor: no gaps left to recheck). */
    private record Harvest(List<OutboxRecord> records, boolean settled) {
    }

    private void harvestWhileWritersCommitLate(PostgresStore store, long seed,
                                               java.util.function.Function<Random, Harvest> harvest)
            throws Exception {
        int writers = 4;
        int roundsPerWriter = 40;
        Map<String, List<String>> committedByKey = new ConcurrentHashMap<>();
        Set<String> committing = ConcurrentHashMap.newKeySet();
        Set<String> rolledBack = ConcurrentHashMap.newKeySet();
        Map<String, List<String>> markedByKey = new ConcurrentHashMap<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        ExecutorService threads = Executors.newFixedThreadPool(writers + 1);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int writer = w;
                Random random = new Random(seed + w);
                futures.add(threads.submit(() -> {
                    Map<String, Integer> sequence = new HashMap<>();
                    for (int round = 0; round < roundsPerWriter; round++) {
                        // keys a* are held open by the early transaction, keys b* are written meanwhile
                        String early = "w" + writer + "-a" + random.nextInt(3);
                        String late = "w" + writer + "-b" + random.nextInt(3);
                        try (Connection t0 = begin()) {
                            List<String> t0Values = write(store, t0, early, sequence, 1 + random.nextInt(3));
                            try (Connection t1 = begin()) {
                                List<String> t1Values = write(store, t1, late, sequence, 1 + random.nextInt(3));
                                finish(t1, t1Values, late, random.nextInt(8) != 0, committing, committedByKey,
                                        rolledBack, sequence);
                            }
                            finish(t0, t0Values, early, random.nextInt(8) != 0, committing, committedByKey,
                                    rolledBack, sequence);
                        }
                    }
                    return null;
                }));
            }
            Future<?> harvester = threads.submit(() -> {
                Random random = new Random(seed - 1);
                boolean last = false;
                while (!last) {
                    last = !writing.get();
                    Harvest step = harvest.apply(random);
                    for (OutboxRecord r : step.records()) {
                        String value = valueOf(r);
                        if (!committing.contains(value)) {
                            violations.add("harvested " + value + " (id " + r.id() + ") before its commit began");
                        }
                        markedByKey.computeIfAbsent(r.key(), k -> new CopyOnWriteArrayList<>()).add(value);
                    }
                    store.purge(step.records().stream().map(OutboxRecord::id).toList());
                    if (last && (!step.records().isEmpty() || !step.settled())) {
                        last = false; // drain what the writers left
                    }
                }
                return null;
            });
            try {
                for (Future<?> f : futures) {
                    f.get(90, TimeUnit.SECONDS);
                }
            } finally {
                writing.set(false);
            }
            harvester.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("seed " + seed + ": a thread failed: " + e.getCause(), e.getCause());
        } finally {
            threads.shutdownNow();
        }

        try {
            assertThat(violations).isEmpty();
            for (List<String> values : markedByKey.values()) {
                assertThat(values).as("rolled back values").doesNotContainAnyElementsOf(rolledBack);
            }
            assertThat(markedByKey).as("per key, every committed row once, in the order written")
                    .containsExactlyInAnyOrderEntriesOf(committedByKey);
            assertThat(store.backlog()).isZero();
        } catch (AssertionError e) {
            throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        }
    }

    private static List<String> write(PostgresStore store, Connection c, String key, Map<String, Integer> sequence,
                                      int count) {
        List<String> values = new ArrayList<>();
        List<OutboxMessage> messages = new ArrayList<>();
        int next = sequence.getOrDefault(key, 0);
        for (int i = 0; i < count; i++) {
            String value = key + "#" + (next + i) + "@" + UUID.randomUUID();
            values.add(value);
            messages.add(OutboxMessage.of("orders", key, value));
        }
        store.publisher().publish(c, messages);
        return values;
    }

    private static void finish(Connection c, List<String> values, String key, boolean commit, Set<String> committing,
                               Map<String, List<String>> committedByKey, Set<String> rolledBack,
                               Map<String, Integer> sequence) throws SQLException {
        if (commit) {
            committing.addAll(values);
            c.commit();
            committedByKey.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).addAll(values);
            sequence.merge(key, values.size(), Integer::sum);
        } else {
            c.rollback();
            rolledBack.addAll(values);
        }
    }

    /**
     * A mark that holds its row locks (here: the mark's own statement in a transaction kept open) does not hold
     * up transactions that insert rows, however many.
     */
    @Test
    void aMarkInProgressNeverBlocksInsertingTransactions() throws Exception {
        PostgresStore store = newStore();
        try (Connection c = begin()) {
            store.publisher().publish(c, List.of(OutboxMessage.of("orders", "k", "a"), OutboxMessage.of("orders", "k", "b")));
            c.commit();
        }
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try (Connection marking = admin.getConnection()) {
            marking.setAutoCommit(false);
            try (PreparedStatement s = marking.prepareStatement(store.markSql())) {
                UUID leader = UUID.randomUUID();
                s.setObject(1, leader);
                s.setObject(2, leader);
                s.setInt(3, 100);
                s.execute();
            }
            List<Future<Long>> inserts = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                inserts.add(threads.submit(() -> {
                    long slowest = 0;
                    for (int i = 0; i < 20; i++) {
                        long started = System.nanoTime();
                        try (Connection c = begin()) {
                            store.publisher().publish(c, OutboxMessage.of("orders", "k" + thread, "v" + i));
                            c.commit();
                        }
                        slowest = Math.max(slowest, System.nanoTime() - started);
                    }
                    return slowest;
                }));
            }
            for (Future<Long> insert : inserts) {
                assertThat(Duration.ofNanos(insert.get(30, TimeUnit.SECONDS)))
                        .as("slowest insert while a mark holds its locks").isLessThan(Duration.ofSeconds(5));
            }
            marking.commit();
        } finally {
            threads.shutdownNow();
        }
        assertThat(store.backlog()).isEqualTo(82);
    }

    /**
     * A new leader's mark meets rows that an old leader's mark has locked but not yet committed: it waits for
     * the old mark to commit, then takes the rows over (it does not skip them, as SKIP LOCKED would).
     */
    @Test
    void aSecondLeaderWaitsForAConcurrentMarkAndThenStealsItsRows() throws Exception {
        PostgresStore store = newStore();
        try (Connection c = begin()) {
            List<OutboxMessage> messages = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                messages.add(OutboxMessage.of("orders", "k" + i, "v" + i));
            }
            store.publisher().publish(c, messages);
            c.commit();
        }
        UUID oldLeader = UUID.randomUUID();
        UUID newLeader = UUID.randomUUID();
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try (Connection oldMark = admin.getConnection()) {
            oldMark.setAutoCommit(false);
            try (PreparedStatement s = oldMark.prepareStatement(store.markSql())) {
                s.setObject(1, oldLeader);
                s.setObject(2, oldLeader);
                s.setInt(3, 5);
                s.execute();
            }
            Future<List<OutboxRecord>> stealing = threads.submit(() -> store.mark(newLeader, 10).records());
            Await.untilOrFail(() -> PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE application_name = 'concurrency_store' AND wait_event_type = 'Lock'") > 0,
                    Duration.ofSeconds(20), () -> "the new leader's mark never waited; done: " + stealing.isDone());
            oldMark.commit();

            List<OutboxRecord> stolen = stealing.get(20, TimeUnit.SECONDS);

            assertThat(stolen).extracting(PostgresConcurrencyTest::valueOf)
                    .containsExactly("v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9");
            assertThat(stolen).allSatisfy(r -> assertThat(r.leaderId()).isEqualTo(newLeader));
            assertThat(store.mark(oldLeader, 10).records()).as("the old leader would take them all back")
                    .hasSize(10);
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * Two leaders mark the same table in tight loops. Every call either succeeds or fails retriably (a
     * deadlock or serialization failure would be reported so), each result is sorted and carries its caller's
     * leader id, and in the end no row carries any other leader id and none was lost.
     */
    @Test
    void twoLeadersMarkingAtOnceNeitherFailNorCorruptTheMarks() throws Exception {
        PostgresStore store = newStore();
        PostgresTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, key, value)"
                + " SELECT 'orders', 'k' || (i % 50), 'v' FROM generate_series(1, 3000) i");
        UUID[] leaders = {UUID.randomUUID(), UUID.randomUUID()};
        AtomicLong retriable = new AtomicLong();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<Future<?>> loops = new ArrayList<>();
            for (UUID leader : leaders) {
                loops.add(threads.submit(() -> {
                    for (int i = 0; i < 30; i++) {
                        try {
                            List<OutboxRecord> marked = store.mark(leader, 500).records();
                            for (int r = 0; r < marked.size(); r++) {
                                assertThat(marked.get(r).leaderId()).isEqualTo(leader);
                                if (r > 0) {
                                    assertThat(marked.get(r).id()).isGreaterThan(marked.get(r - 1).id());
                                }
                            }
                        } catch (StoreException e) {
                            assertThat(e.isRetriable()).as("retriable: %s", e.getMessage()).isTrue();
                            retriable.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> loop : loops) {
                loop.get(90, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        // The two leaders keep stealing the head from each other, so how far they got down the table depends on
        // scheduling; what must hold is that no row carries any other id, and every row is still there.
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM " + store.table()
                + " WHERE leader_id IS NOT NULL AND leader_id NOT IN ('" + leaders[0] + "', '" + leaders[1] + "')"))
                .isZero();
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM " + store.table())).isEqualTo(3000);
        long heldByLeader0 = PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM " + store.table()
                + " WHERE leader_id = '" + leaders[0] + "'");
        assertThat(store.mark(leaders[0], 5000).records()).as("what leader 0 did not hold, it takes now")
                .hasSize((int) (3000 - heldByLeader0));
        assertThat(retriable.get()).as("retriable failures out of 60 marks").isLessThan(30);
    }
}
