package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.testkit.Capabilities;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The per-key sequence of a SQL store ({@link SqlStore.Builder#keySequence}, {@link SqlKeySequence}) and the replay
 * marker ({@link KeySequence#REPLAYED}), against a real server: the numbers are 1, 2, 3, … per (topic, key) across
 * batches and transactions, ascending in id order under concurrent writers of one key, without a hole after a
 * rollback; a forged header is refused; with the option off nothing changes. A subclass starts the database and
 * sets {@link #admin}, {@link #storePool} and {@link #appPool} in a {@code @BeforeAll} method; each test has tables
 * of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlKeySequenceContract {
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
    protected SqlKeySequenceContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    @AfterEach
    final void dropTables() {
        for (SqlStore store : created) {
            Jdbc.execute(admin, "DROP TABLE IF EXISTS " + store.table() + ", " + store.parkedTable() + ", "
                    + store.leaderTable() + ", " + SqlKeySequence.table(names(store)));
        }
        created.clear();
    }

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    // ---- numbering ------------------------------------------------------------------------------------------

    @Test
    void numbersAreOneTwoThreePerTopicAndKeyAcrossBatchesCallsAndTransactions() {
        SqlStore store = store(true);
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(msg(TOPIC, "b", "b1"), msg(TOPIC, "a", "a1"), msg(TOPIC, "b", "b2"),
                    msg("payments", "a", "pa1"), msg(TOPIC, "a", "a2")));
            tx.publish(List.of(msg(TOPIC, "a", "a3")));
            tx.commit();
        }
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(msg("payments", "a", "pa2"), msg(TOPIC, "b", "b3"), msg(TOPIC, "c", "c1")));
            tx.commit();
        }

        List<OutboxRecord> rows = rows(store);
        assertThat(rows).extracting(SqlKeySequenceContract::value)
                .containsExactly("b1", "a1", "b2", "pa1", "a2", "a3", "pa2", "b3", "c1");
        assertThat(rows).extracting(SqlKeySequenceContract::sequence).containsExactly(1L, 1L, 2L, 1L, 2L, 3L, 2L, 3L, 1L);
        assertThat(rows).allSatisfy(r -> assertThat(r.message().headers()).as("one sequence header, last")
                .filteredOn(h -> h.name().equals(KeySequence.SEQUENCE)).hasSize(1));
    }

    /** The decorators run first: their headers come before the sequence header, their key is the one numbered. */
    @Test
    void theDecoratorsRunBeforeTheNumbering() {
        SqlStore store = store(builders.apply(storePool).keySequence(true)
                .decorator(m -> OutboxMessage.of(m.topic(), "decorated-" + m.key(), m.value(), m.headers())
                        .withHeader(Header.of("trace", "t"))));
        commit(store, msg(TOPIC, "a", "1"), msg(TOPIC, "b", "2"));

        List<OutboxRecord> rows = rows(store);
        assertThat(rows).extracting(OutboxRecord::key).containsExactly("decorated-a", "decorated-b");
        assertThat(rows.get(0).message().headers()).extracting(Header::name)
                .containsExactly("trace", KeySequence.SEQUENCE);
        assertThat(rows).extracting(SqlKeySequenceContract::sequence).containsExactly(1L, 1L);
        assertThat(Jdbc.queryLong(admin, "SELECT seq FROM " + SqlKeySequence.table(names(store))
                + " WHERE topic = '" + TOPIC + "' AND " + keyColumn() + " = 'decorated-a'")).isEqualTo(1);
    }

    /**
     * Writers of one key race, each in its own transaction, many rounds, with batches of random sizes that also
     * write a second key: after they committed, each key's numbers are exactly 1..N, ascending in id order (the order
     * the table harvests deliver in).
     */
    @Test
    void concurrentWritersOfOneKeyGetOneToNAscendingInIdOrder() throws Exception {
        SqlStore store = store(true);
        long seed = System.nanoTime();
        int threads = 4;
        int rounds = 40;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Integer>> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Random random = new Random(seed + t);
                int writer = t;
                writers.add(pool.submit(() -> {
                    start.await();
                    int written = 0;
                    for (int round = 0; round < rounds; round++) {
                        List<OutboxMessage> batch = new ArrayList<>();
                        for (int i = 1 + random.nextInt(3); i > 0; i--) {
                            batch.add(msg(TOPIC, random.nextInt(4) == 0 ? "cold" : "hot", writer + "-" + round));
                        }
                        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
                            tx.publish(batch);
                            tx.commit();
                        }
                        written += batch.size();
                    }
                    return written;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> w : writers) {
                total += w.get(120, TimeUnit.SECONDS);
            }

            List<OutboxRecord> rows = rows(store);
            assertThat(rows).as("seed %d", seed).hasSize(total);
            Map<String, List<Long>> byKey = new TreeMap<>();
            for (OutboxRecord r : rows) { // in id order
                byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(sequence(r));
            }
            for (Map.Entry<String, List<Long>> key : byKey.entrySet()) {
                assertThat(key.getValue()).as("key %s in id order, seed %d", key.getKey(), seed)
                        .containsExactlyElementsOf(LongStream.rangeClosed(1, key.getValue().size()).boxed().toList());
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    /**
     * Two writers publish the same keys in opposite list orders, many rounds, each round in its own transaction: the
     * counters are locked in sorted order whatever the list's, so neither waits for the other in a cycle (a deadlock
     * would fail a publish), and each key's numbers are 1..N in id order.
     */
    @Test
    void writersOfTheSameKeysInOppositeOrdersDoNotDeadlock() throws Exception {
        SqlStore store = store(true);
        commit(store, msg(TOPIC, "a", "first"), msg(TOPIC, "b", "first")); // the counter rows exist: no gap locks
        int rounds = 150;
        List<List<String>> orders = List.of(List.of("a", "b"), List.of("b", "a"), List.of("a", "b"), List.of("b", "a"));
        ExecutorService pool = Executors.newFixedThreadPool(orders.size());
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> writers = new ArrayList<>();
            for (List<String> order : orders) {
                writers.add(pool.submit(() -> {
                    start.await();
                    for (int round = 0; round < rounds; round++) {
                        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
                            tx.publish(List.of(msg(TOPIC, order.get(0), "v"), msg(TOPIC, order.get(1), "v")));
                            tx.commit();
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> w : writers) {
                w.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }
        Map<String, List<Long>> byKey = new TreeMap<>();
        for (OutboxRecord r : rows(store)) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(sequence(r));
        }
        assertThat(byKey.keySet()).containsExactly("a", "b");
        for (List<Long> numbers : byKey.values()) {
            assertThat(numbers).containsExactlyElementsOf(LongStream.rangeClosed(1, 1 + orders.size() * rounds).boxed()
                    .toList());
        }
    }

    /** A rolled-back transaction's increment rolls back with it: the next writer of the key takes its number. */
    @Test
    void aRolledBackTransactionLeavesNoHole() {
        SqlStore store = store(true);
        commit(store, msg(TOPIC, "k", "first"));
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(msg(TOPIC, "k", "rolled back"), msg(TOPIC, "k", "rolled back"),
                    msg(TOPIC, "new", "rolled back")));
            tx.rollback();
        }
        commit(store, msg(TOPIC, "new", "new"), msg(TOPIC, "k", "second"));

        List<OutboxRecord> rows = rows(store);
        assertThat(rows).extracting(SqlKeySequenceContract::value).containsExactly("first", "new", "second");
        assertThat(rows).extracting(SqlKeySequenceContract::sequence).containsExactly(1L, 1L, 2L);
    }

    /** A message that carries the sequence header already is refused, naming it; nothing is written or counted. */
    @Test
    void aForgedSequenceHeaderIsRefusedNamingIt() {
        SqlStore store = store(true);
        OutboxMessage forged = msg(TOPIC, "k", "forged").withHeader(Header.of(KeySequence.SEQUENCE,
                KeySequence.encode(7)));
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            assertThatThrownBy(() -> tx.publish(List.of(msg(TOPIC, "k", "fine"), forged)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 1").hasMessageContaining("'" + TOPIC + "'")
                    .hasMessageContaining(KeySequence.SEQUENCE);
            tx.commit();
        }
        commit(store, msg(TOPIC, "k", "next"));

        assertThat(rows(store)).extracting(SqlKeySequenceContract::value).containsExactly("next");
        assertThat(rows(store)).extracting(SqlKeySequenceContract::sequence).containsExactly(1L);
    }

    /** With the option off: no header, no counter table, and a message may carry any header. */
    @Test
    void withTheOptionOffNothingIsNumberedAndNoCounterTableIsNeeded() {
        SqlStore store = store(false);
        assertThat(store.keySequence()).isFalse();
        String counter = SqlKeySequence.table(names(store));
        assertThatThrownBy(() -> Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + counter))
                .as("createSchema() made no counter table").isInstanceOf(IllegalStateException.class);
        OutboxMessage carrying = msg(TOPIC, "k", "v").withHeader(Header.of(KeySequence.SEQUENCE, "x"));
        commit(store, msg(TOPIC, "k", "plain"), carrying);

        List<OutboxRecord> rows = rows(store);
        assertThat(rows.get(0).message().headers()).isEmpty();
        assertThat(rows.get(1).message()).isEqualTo(carrying);
    }

    /** The counter table's name must fit the database's identifier limit: a longer table name is refused. */
    @Test
    void aTableNameWithNoRoomForTheCounterTableIsRefused() {
        int max = builders.apply(storePool).dialect.tableNames().maxIdentifierLength() - SqlKeySequence.TABLE_SUFFIX.length();
        String tooLong = "t".repeat(max + 1);
        assertThatThrownBy(() -> builders.apply(storePool).table(tooLong).keySequence(true).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(tooLong)
                .hasMessageContaining(SqlKeySequence.TABLE_SUFFIX);
        assertThat(builders.apply(storePool).table("t".repeat(max)).keySequence(true).build().keySequence()).isTrue();
    }

    // ---- replay ---------------------------------------------------------------------------------------------

    /**
     * A replayed row carries {@link KeySequence#REPLAYED}, its parked id, after its own headers (its sequence number
     * kept); the key's rows the replay moved behind it do not.
     */
    @Test
    void aReplayedRowCarriesItsParkedIdAndTheRowsMovedBehindItDoNot() {
        SqlStore store = store(true);
        commit(store, msg(TOPIC, "k", "k1"), msg(TOPIC, "k", "k2"), msg(TOPIC, "other", "o1"));
        List<OutboxRecord> before = rows(store);
        long parkedId = before.get(0).id();
        store.park(Map.of(parkedId, "parked by the test"));

        assertThat(Capabilities.parkedRecords(store).replay(List.of(parkedId))).isEqualTo(1);

        List<OutboxRecord> after = rows(store);
        assertThat(after).extracting(SqlKeySequenceContract::value).containsExactly("o1", "k1", "k2");
        OutboxRecord replayed = after.get(1);
        assertThat(replayed.message().headers()).extracting(Header::name)
                .containsExactly(KeySequence.SEQUENCE, KeySequence.REPLAYED);
        assertThat(KeySequence.decode(KeySequence.REPLAYED, KeySequence.last(replayed.message().headers(),
                KeySequence.REPLAYED))).isEqualTo(parkedId);
        assertThat(sequence(replayed)).isEqualTo(1);
        assertThat(after.get(2).message().headers()).as("moved behind, not replayed").extracting(Header::name)
                .containsExactly(KeySequence.SEQUENCE);
        assertThat(after.get(0).message().headers()).extracting(Header::name).containsExactly(KeySequence.SEQUENCE);
    }

    // ---- helpers --------------------------------------------------------------------------------------------

    /** The key column as plain SQL names it ({@code "key"} in H2, {@code `key`} in MySQL). */
    protected abstract String keyColumn();

    private SqlStore store(boolean keySequence) {
        return store(builders.apply(storePool).keySequence(keySequence));
    }

    private SqlStore store(SqlStore.Builder<?, ?> builder) {
        SqlStore store = builder.table("keyseq_" + tables.incrementAndGet()).build();
        created.add(store);
        Jdbc.execute(admin, "DROP TABLE IF EXISTS " + SqlKeySequence.table(names(store)));
        store.createSchema();
        return store;
    }

    private static dev.outbox.spi.SqlTableNames names(SqlStore store) {
        return store.names;
    }

    private void commit(SqlStore store, OutboxMessage... messages) {
        try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
            tx.publish(List.of(messages));
            tx.commit();
        }
    }

    /** Every row of the outbox, in id order. */
    private static List<OutboxRecord> rows(SqlStore store) {
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> all = new ArrayList<>();
        for (MarkResult result = store.mark(leader, 500); !result.isEmpty(); result = store.mark(leader, 500)) {
            assertThat(result.rejected()).isEmpty();
            all.addAll(result.records());
        }
        return all;
    }

    private static OutboxMessage msg(String topic, String key, String value) {
        return OutboxMessage.of(topic, key, value);
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    private static long sequence(OutboxRecord r) {
        byte[] value = KeySequence.last(r.message().headers(), KeySequence.SEQUENCE);
        assertThat(value).as("the sequence header of row %d", r.id()).isNotNull();
        return KeySequence.decode(KeySequence.SEQUENCE, value);
    }
}
