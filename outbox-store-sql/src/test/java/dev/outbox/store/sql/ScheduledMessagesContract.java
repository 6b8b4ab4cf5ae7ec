package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * "Not before" in a SQL store ({@link SqlStore.Builder#scheduling}, {@link SqlScheduling}), against a real server: a
 * delayed message waits in {@code <table>_scheduled} until its due time by the database's clock, then a release
 * moves it into the outbox; a message without a time of a held key waits behind it; other keys are not held; racing
 * releases move every row once; a racing writer keeps its key's order; with the key not held
 * ({@link SqlStore.Builder#scheduledHoldsKey scheduledHoldsKey(false)}) a plain message passes a waiting one of its
 * key and each delayed one goes at its own time; with the option off a delayed message is refused. A subclass starts the database and sets {@link #admin}, {@link #storePool} and {@link #appPool} in a
 * {@code @BeforeAll} method; each test has tables of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class ScheduledMessagesContract {
    private static final String TOPIC = "orders";
    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    private final List<SqlStore> created = new ArrayList<>();
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the store takes its connections from. */
    protected HikariDataSource storePool;
    /** The pool the application's transactions run on (at least 5 connections). */
    protected HikariDataSource appPool;

    /** @param builders a builder of the store under test on a data source */
    protected ScheduledMessagesContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    /**
     * A query of the microseconds from the database's clock now (the current time, not the transaction's start) to
     * the earliest {@code due_at} of {@code table}: one row, one column.
     *
     * @param table the scheduled table as it appears in SQL
     * @return the query
     */
    protected abstract String microsUntilDueSql(String table);

    @AfterEach
    final void dropTables() {
        for (SqlStore store : created) {
            Jdbc.execute(admin, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                    + store.leaderTable() + ", " + SqlScheduling.table(store.names) + ", "
                    + SqlKeySequence.table(store.names));
        }
        created.clear();
    }

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    // ---- the due time -----------------------------------------------------------------------------------------

    /**
     * A message delayed by 1.5 s is due 1.5 s after its write by the database's clock; the release that moves it
     * ends after that time by the database's clock (read after the call), and the releases before it moved nothing;
     * the moved message keeps its value, headers and message id.
     */
    @Test
    void aDelayedMessageIsNotReleasedBeforeItsDueTimeByTheDatabaseClock() {
        isNotReleasedBeforeItsDueTime(store(true));
    }

    /** The same with the key not held: the release that leaves out the key's check still checks the due time. */
    @Test
    void notHoldingTheKeyADelayedMessageIsNotReleasedBeforeItsDueTimeEither() {
        isNotReleasedBeforeItsDueTime(store(builders.apply(storePool).scheduling(true).scheduledHoldsKey(false)));
    }

    private void isNotReleasedBeforeItsDueTime(SqlStore store) {
        ScheduledMessages scheduled = scheduled(store);
        Duration delay = Duration.ofMillis(1500);
        OutboxMessage delayed = OutboxMessage.builder(TOPIC, "k").value("later").header("trace", "t1")
                .deliverAfter(delay).build();
        commit(store, delayed);
        String scheduledTable = SqlScheduling.table(store.names);
        assertThat(Jdbc.queryLong(admin, microsUntilDueSql(scheduledTable)))
                .as("due 1.5 s after the write by the database's clock, in µs")
                .isBetween(delay.toNanos() / 1000 - 1_000_000, delay.toNanos() / 1000);
        String dueCopy = "sched_due_copy_" + tables.get();
        Jdbc.execute(admin, "DROP TABLE IF EXISTS " + dueCopy);
        Jdbc.execute(admin, "CREATE TABLE " + dueCopy + " AS SELECT due_at FROM " + scheduledTable);
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            int early = 0;
            while (true) {
                assertThat(System.nanoTime()).as("released within 30 s").isLessThan(deadline);
                int moved = scheduled.releaseDue(10).moved();
                long untilDue = Jdbc.queryLong(admin, microsUntilDueSql(dueCopy));
                if (moved > 0) {
                    assertThat(moved).isEqualTo(1);
                    assertThat(untilDue).as("µs from the end of the release that moved it to its due time")
                            .isLessThanOrEqualTo(0);
                    break;
                }
                assertThat(rows(store)).isEmpty();
                early += untilDue > 0 ? 1 : 0;
            }
            assertThat(early).as("releases that ended before the due time (and moved nothing)").isPositive();
        } finally {
            Jdbc.execute(admin, "DROP TABLE IF EXISTS " + dueCopy);
        }
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + scheduledTable)).isZero();
        List<OutboxRecord> rows = rows(store);
        assertThat(rows).hasSize(1);
        assertThat(rows.get(0).message()).isEqualTo(delayed.withoutDeliveryOptions());
    }

    /**
     * A time in the past is due at once; one an hour ahead waits, and {@code nextDue} says about an hour; with
     * nothing waiting, {@code nextDue} is null.
     */
    @Test
    void deliverAtIsTheGivenTimeAndNextDueReportsTheNextOne() {
        SqlStore store = store(true);
        ScheduledMessages scheduled = scheduled(store);
        assertThat(scheduled.releaseDue(10)).isEqualTo(new ScheduledMessages.Release(0, null));
        commit(store, OutboxMessage.builder(TOPIC, "a").value("past").deliverAt(Instant.now().minusSeconds(60)).build(),
                OutboxMessage.builder(TOPIC, "b").value("hour").deliverAt(Instant.now().plusSeconds(3600)).build());

        ScheduledMessages.Release r = scheduled.releaseDue(10);
        assertThat(r.moved()).isEqualTo(1);
        assertThat(r.nextDue()).isBetween(Duration.ofMinutes(59), Duration.ofMinutes(61));
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("past");
        assertThat(scheduled.releaseDue(10).moved()).isZero();
    }

    // ---- holding the key --------------------------------------------------------------------------------------

    /**
     * A message without a time of a key that has a message waiting waits behind it, in a later call or the same
     * one, and comes out after it, in order; a due message behind one that is not due stays; other keys go out at
     * once.
     */
    @Test
    void aPlainMessageOfAHeldKeyWaitsBehindAndComesOutAfterInOrder() {
        SqlStore store = store(true);
        ScheduledMessages scheduled = scheduled(store);
        commit(store, OutboxMessage.builder(TOPIC, "k").value("d1").deliverAfter(Duration.ofMillis(700)).build());
        commit(store, msg("k", "p1"), msg("other", "o1"), msg("k", "p2"));
        commit(store, msg("j", "a"), OutboxMessage.builder(TOPIC, "j").value("b").deliverAfter(Duration.ofHours(1))
                .build(), msg("j", "c"));

        ScheduledMessages.Release first = scheduled.releaseDue(10);
        assertThat(first.moved()).as("p1 and p2 are due, but behind d1").isZero();
        assertThat(first.nextDue()).as("the next is d1's time, not the held rows' (due already, but not movable)")
                .isPositive().isLessThanOrEqualTo(Duration.ofMillis(700));
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("o1", "a");

        int moved = releaseUntil(scheduled, 3);
        assertThat(moved).isEqualTo(3);
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("d1", "p1", "p2");
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlScheduling.table(store.names)))
                .as("b, and c behind it").isEqualTo(2);
    }

    /** With the key sequence on, a scheduled message keeps the number it took at write time. */
    @Test
    void aScheduledMessageKeepsItsKeySequenceNumber() {
        SqlStore store = store(builders.apply(storePool).scheduling(true).keySequence(true));
        commit(store, OutboxMessage.builder(TOPIC, "k").value("1").deliverAfter(Duration.ZERO).build(),
                msg("k", "2"));
        commit(store, msg("k", "3"));
        assertThat(releaseUntil(scheduled(store), 3)).isEqualTo(3);
        List<OutboxRecord> rows = rows(store);
        assertThat(rows).extracting(ScheduledMessagesContract::value).containsExactly("1", "2", "3");
        assertThat(rows).extracting(r -> KeySequence.decode(KeySequence.SEQUENCE,
                KeySequence.last(r.message().headers(), KeySequence.SEQUENCE))).containsExactly(1L, 2L, 3L);
    }

    /**
     * A sharded outbox: the moved rows take their shard from their key, and each shard's view finds its own. For the
     * stores that shard: their test class runs it.
     */
    protected final void aShardedOutboxFindsTheMovedRowsInTheirShards() {
        SqlStore store = store(builders.apply(storePool).scheduling(true).shards(2));
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            messages.add(OutboxMessage.builder(TOPIC, "key-" + i).value("v" + i).deliverAfter(Duration.ZERO).build());
        }
        commit(store, messages.toArray(OutboxMessage[]::new));
        assertThat(releaseUntil(scheduled(store), 20)).isEqualTo(20);
        int found = 0;
        for (int shard = 0; shard < 2; shard++) {
            for (OutboxRecord r : rows(store.shard(shard))) {
                assertThat(dev.outbox.OutboxShards.shardOf(r.key(), 2)).isEqualTo(shard);
                found++;
            }
        }
        assertThat(found).isEqualTo(20);
    }

    // ---- not holding the key ----------------------------------------------------------------------------------

    /**
     * With the key not held, a message without a time goes straight into the outbox after a delayed one of its key,
     * in a later call or the same one, without reading the scheduled table (renamed away while it is written), and
     * is harvested before the delayed one is released.
     */
    @Test
    void notHoldingTheKeyAPlainMessagePassesAWaitingOneWithoutReadingTheScheduledTable() {
        SqlStore store = store(builders.apply(storePool).scheduling(true).scheduledHoldsKey(false));
        commit(store, OutboxMessage.builder(TOPIC, "k").value("d1").deliverAfter(Duration.ofHours(1)).build());
        String table = SqlScheduling.table(store.names);
        String away = table.replace(SqlScheduling.TABLE_SUFFIX, "_away");
        Jdbc.execute(admin, "ALTER TABLE " + table + " RENAME TO " + away);
        try {
            commit(store, msg("k", "p1"));
        } finally {
            Jdbc.execute(admin, "ALTER TABLE " + away + " RENAME TO " + table);
        }
        commit(store, OutboxMessage.builder(TOPIC, "k").value("d2").deliverAfter(Duration.ZERO).build(),
                msg("k", "p2"));
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("p1", "p2");
        assertThat(releaseUntil(scheduled(store), 1)).isEqualTo(1);
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("d2");
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + table)).as("d1 waits for its hour").isEqualTo(1);
    }

    /**
     * With the key not held, each delayed message of a key goes at its own time: two written after one due in an
     * hour, but due now, go out (in their order of writing), and the first one still waits.
     */
    @Test
    void notHoldingTheKeyEachDelayedMessageOfAKeyGoesAtItsOwnTime() {
        SqlStore store = store(builders.apply(storePool).scheduling(true).scheduledHoldsKey(false));
        ScheduledMessages scheduled = scheduled(store);
        commit(store, OutboxMessage.builder(TOPIC, "k").value("hour").deliverAfter(Duration.ofHours(1)).build());
        commit(store, OutboxMessage.builder(TOPIC, "k").value("now").deliverAfter(Duration.ZERO).build(),
                OutboxMessage.builder(TOPIC, "k").value("past").deliverAt(Instant.now().minusSeconds(60)).build());

        assertThat(releaseUntil(scheduled, 2)).isEqualTo(2);
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("now", "past");
        ScheduledMessages.Release r = scheduled.releaseDue(10);
        assertThat(r.moved()).isZero();
        assertThat(r.nextDue()).isBetween(Duration.ofMinutes(59), Duration.ofMinutes(61));
    }

    /** {@code scheduledHoldsKey(false)} without scheduling is refused, naming both settings; holding is the default. */
    @Test
    void notHoldingTheKeyWithoutSchedulingIsRefusedNamingBoth() {
        assertThatThrownBy(() -> builders.apply(storePool).table("sched_refused").scheduledHoldsKey(false).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("scheduledHoldsKey(false)")
                .hasMessageContaining("scheduling(true)");
        assertThat(((SqlScheduling) scheduled(builders.apply(storePool).table("sched_default").scheduling(true)
                .build())).holdsKey()).isTrue();
    }

    // ---- races ------------------------------------------------------------------------------------------------

    /**
     * Three releases race over 60 due messages of 5 keys, 20 rounds: every message is moved exactly once, and each
     * key's messages reach the outbox in the order they were written.
     */
    @Test
    void concurrentReleasesMoveEveryRowExactlyOnce() throws Exception {
        racingReleases(store(true), 20, true);
    }

    /** The same with the key not held, 3 rounds: every message moved exactly once (the order is not promised). */
    @Test
    void notHoldingTheKeyConcurrentReleasesMoveEveryRowExactlyOnce() throws Exception {
        racingReleases(store(builders.apply(storePool).scheduling(true).scheduledHoldsKey(false)), 3, false);
    }

    private void racingReleases(SqlStore store, int rounds, boolean keyOrder) throws Exception {
        ScheduledMessages scheduled = scheduled(store);
        long seed = System.nanoTime();
        Random random = new Random(seed);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            for (int round = 0; round < rounds; round++) {
                List<OutboxMessage> batch = new ArrayList<>();
                for (int i = 0; i < 60; i++) {
                    batch.add(OutboxMessage.builder(TOPIC, "k" + random.nextInt(5)).value(round + "-" + i)
                            .deliverAfter(Duration.ZERO).build());
                }
                commit(store, batch.toArray(OutboxMessage[]::new));
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Integer>> movers = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    movers.add(pool.submit(() -> {
                        start.await();
                        int moved = 0;
                        for (int m = scheduled.releaseDue(7).moved(); m > 0; m = scheduled.releaseDue(7).moved()) {
                            moved += m;
                        }
                        return moved;
                    }));
                }
                start.countDown();
                int total = 0;
                for (Future<Integer> f : movers) {
                    total += f.get(60, TimeUnit.SECONDS);
                }
                assertThat(total).as("round %d, seed %d", round, seed).isEqualTo(60);
                List<OutboxRecord> rows = rows(store);
                assertThat(rows).as("round %d, seed %d", round, seed).hasSize(60)
                        .extracting(ScheduledMessagesContract::value).doesNotHaveDuplicates();
                Map<String, Integer> last = new HashMap<>();
                for (OutboxRecord r : keyOrder ? rows : List.<OutboxRecord>of()) {
                    int i = Integer.parseInt(value(r).substring(value(r).indexOf('-') + 1));
                    assertThat(i).as("key %s in order, round %d, seed %d", r.key(), round, seed)
                            .isGreaterThan(last.getOrDefault(r.key(), -1));
                    last.put(r.key(), i);
                }
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    /**
     * A writer of a key races the release of that key's last waiting message, 40 rounds: whether its check runs
     * before the release commits (it writes behind, into the scheduled table) or after (it writes into the outbox),
     * its message reaches the outbox after the released one.
     */
    @Test
    void aWriterRacingTheReleaseOfItsKeyComesAfterTheReleasedMessage() throws Exception {
        SqlStore store = store(true);
        ScheduledMessages scheduled = scheduled(store);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        int behind = 0;
        try {
            for (int round = 0; round < 40; round++) {
                commit(store, OutboxMessage.builder(TOPIC, "k").value(round + "-0").deliverAfter(Duration.ZERO)
                        .build());
                CountDownLatch start = new CountDownLatch(1);
                String plain = round + "-1";
                Future<?> release = pool.submit(() -> {
                    start.await();
                    return scheduled.releaseDue(10);
                });
                Future<?> writer = pool.submit(() -> {
                    start.await();
                    commit(store, msg("k", plain));
                    return null;
                });
                start.countDown();
                release.get(60, TimeUnit.SECONDS);
                writer.get(60, TimeUnit.SECONDS);
                behind += (int) Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlScheduling.table(store.names));
                releaseUntil(scheduled, 0);
                assertThat(rows(store)).extracting(ScheduledMessagesContract::value).as("round %d", round)
                        .containsExactly(round + "-0", plain);
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
        System.out.println("writers that wrote behind the released message: " + behind + " of 40");
    }

    // ---- transactions and the option --------------------------------------------------------------------------

    /** A rolled-back writer leaves nothing scheduled, and holds no key. */
    @Test
    void aRolledBackWriterLeavesNothingScheduled() {
        SqlStore store = store(true);
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(OutboxMessage.builder(TOPIC, "k").value("v").deliverAfter(Duration.ofHours(1)).build(),
                    msg("k", "behind")));
            tx.rollback();
        }
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + SqlScheduling.table(store.names))).isZero();
        commit(store, msg("k", "plain"));
        assertThat(rows(store)).extracting(ScheduledMessagesContract::value).containsExactly("plain");
    }

    /**
     * With the option off: no capability, no scheduled table, and a delayed message is refused naming it and the
     * option; nothing of the call is written.
     */
    @Test
    void withTheOptionOffADelayedMessageIsRefusedNamingItAndNoTableIsNeeded() {
        SqlStore store = store(false);
        assertThat(store.scheduling()).isFalse();
        assertThat(store.capability(ScheduledMessages.class)).isEmpty();
        String table = SqlScheduling.table(store.names);
        assertThatThrownBy(() -> Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + table))
                .as("createSchema() made no scheduled table").isInstanceOf(IllegalStateException.class);
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            assertThatThrownBy(() -> tx.publish(List.of(msg("k", "fine"), OutboxMessage.builder(TOPIC, "late")
                    .value("v").deliverAfter(Duration.ofSeconds(5)).build())))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message 1")
                    .hasMessageContaining("'late'").hasMessageContaining("scheduling(true)");
            tx.commit();
        }
        assertThat(rows(store)).isEmpty();
    }

    /** The scheduled table's name and its index's must fit the database's identifier limit. */
    @Test
    void aTableNameWithNoRoomForTheScheduledTableIsRefused() {
        int max = builders.apply(storePool).dialect.tableNames().maxIdentifierLength()
                - (SqlScheduling.TABLE_SUFFIX + "_due").length();
        String tooLong = "t".repeat(max + 1);
        assertThatThrownBy(() -> builders.apply(storePool).table(tooLong).scheduling(true).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(tooLong)
                .hasMessageContaining(SqlScheduling.TABLE_SUFFIX);
        assertThat(builders.apply(storePool).table("t".repeat(max)).scheduling(true).build().scheduling()).isTrue();
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** Releases until {@code expected} messages moved (or, for 0, until a release moves none); returns the count. */
    private static int releaseUntil(ScheduledMessages scheduled, int expected) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int moved = 0;
        while (true) {
            int m = scheduled.releaseDue(100).moved();
            moved += m;
            if (expected == 0 ? m == 0 : moved >= expected) {
                return moved;
            }
            assertThat(System.nanoTime()).as("%d moved within 30 s, %d so far", expected, moved)
                    .isLessThan(deadline);
        }
    }

    private static ScheduledMessages scheduled(Store store) {
        return store.capability(ScheduledMessages.class).orElseThrow();
    }

    private SqlStore store(boolean scheduling) {
        return store(builders.apply(storePool).scheduling(scheduling));
    }

    private SqlStore store(SqlStore.Builder<?, ?> builder) {
        SqlStore store = builder.table("sched_" + tables.incrementAndGet()).build();
        created.add(store);
        Jdbc.execute(admin, "DROP TABLE IF EXISTS " + SqlScheduling.table(store.names));
        store.createSchema();
        return store;
    }

    private void commit(SqlStore store, OutboxMessage... messages) {
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(messages));
            tx.commit();
        }
    }

    /** Every row of the outbox (or of a shard), in id order, taken out of it (read once). */
    private static List<OutboxRecord> rows(Store store) {
        UUID leader = UUID.randomUUID();
        MarkHarvest harvest = store.capability(MarkHarvest.class).orElseThrow();
        List<OutboxRecord> all = new ArrayList<>();
        for (MarkResult result = harvest.mark(leader, 500); !result.isEmpty(); result = harvest.mark(leader, 500)) {
            assertThat(result.rejected()).isEmpty();
            all.addAll(result.records());
            store.purge(result.records().stream().map(OutboxRecord::id).toList());
        }
        return all;
    }

    private static OutboxMessage msg(String key, String value) {
        return OutboxMessage.of(TOPIC, key, value);
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }
}
