package dev.outbox.store.sql;

import dev.outbox.testkit.Capabilities;

import dev.outbox.spi.StoreFencedException;
import java.sql.Connection;
import java.sql.Statement;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.StoreContract;
import dev.outbox.testkit.TestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store contract for a SQL store, the store on one connection pool and the application's writers on another,
 * each test on tables of its own. A subclass starts the database and sets {@link #admin}, {@link #storePool} and
 * {@link #appPool} in a {@code @BeforeAll} method, and writes the rows by hand that only it knows how to.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlStoreContract extends StoreContract {
    private final AtomicInteger tables = new AtomicInteger();
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the store takes its connections from. */
    protected HikariDataSource storePool;
    /** The pool the application's transactions run on. */
    protected HikariDataSource appPool;

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    private final String malformedRowSql;
    private final String rowSql;
    private final String rowWithIdSql;

    /**
     * @param builders        a builder of the store under test on a data source
     * @param malformedRowSql an {@code INSERT} of a row the store cannot read as a message, with {@code ${table}},
     *                        {@code ${topic}} and {@code ${key}} standing for the values
     * @param rowSql          an {@code INSERT} of a valid row with no headers and the value {@code 'x'}, with
     *                        {@code ${table}}, {@code ${topic}}, {@code ${key}} and {@code ${attempts}}
     * @param rowWithIdSql    an {@code INSERT} of a valid row with no headers and the value {@code 'x'} that sets its
     *                        id, as a careless writer in another language might, with {@code ${table}},
     *                        {@code ${topic}}, {@code ${key}} and {@code ${id}}
     */
    protected SqlStoreContract(Function<DataSource, SqlStore.Builder<?, ?>> builders, String malformedRowSql,
                               String rowSql, String rowWithIdSql) {
        this.builders = builders;
        this.malformedRowSql = malformedRowSql;
        this.rowSql = rowSql;
        this.rowWithIdSql = rowWithIdSql;
    }

    @Override
    protected final Store createStore() {
        return create(builders.apply(storePool));
    }

    @Override
    protected final Store createStore(int maxKeyLength) {
        return create(builders.apply(storePool).maxKeyLength(maxKeyLength));
    }

    private Store create(SqlStore.Builder<?, ?> builder) {
        SqlStore created = builder.table("contract_" + tables.incrementAndGet()).build();
        created.createSchema();
        return created;
    }

    @Override
    protected final TestTransaction begin(Store store) {
        return JdbcTestTransaction.begin(appPool, store.publisher());
    }

    @Override
    protected final void disposeStore(Store store) {
        SqlStore sql = (SqlStore) store;
        Jdbc.execute(admin, "DROP TABLE " + sql.table() + ", " + sql.parkedTable() + ", " + sql.leaderTable());
    }

    @Override
    protected final void insertMalformedRow(Store store, String topic, String key) {
        Jdbc.execute(admin, fill(malformedRowSql, store, topic, key));
    }

    @Override
    protected final void insertRow(Store store, String topic, String key, int attempts) {
        Jdbc.execute(admin, fill(rowSql, store, topic, key).replace("${attempts}", Integer.toString(attempts)));
    }

    private static String fill(String sql, Store store, String topic, String key) {
        return sql.replace("${table}", ((SqlStore) store).table()).replace("${topic}", topic)
                .replace("${key}", key);
    }

    // ---- ids are the outbox's (#42) ------------------------------------------------------------------------

    /**
     * A row whose id its writer set below the ids the outbox assigns would lie below every cursor and never be read.
     * The schema refuses it, and the rows written before and after it are harvested as if it had never been tried.
     */
    @Test
    void aRowWithANegativeIdWrittenByHandIsRefusedByTheDatabase() {
        assertTheDatabaseRefusesTheId(-7);
    }

    /**
     * A row whose id its writer set far above the sequence would move the harvest's cursor past every row written
     * after it. Either the schema refuses it (the next row takes the sequence's next id, as if it had never been
     * tried), or, where {@link #idsAboveTheSequenceMoveItOn()}, the sequence moves on past it: the row is read at
     * once, and every row written after it takes a higher id, so that the cursor passes none of them.
     */
    @Test
    void aRowWithAnIdFarAboveTheSequenceWrittenByHandIsRefusedOrLeavesLaterRowsUnaffected() {
        long farAbove = 1L << 50;
        if (!idsAboveTheSequenceMoveItOn()) {
            assertTheDatabaseRefusesTheId(farAbove);
            return;
        }
        commit(msg("k", "before"));
        Jdbc.execute(admin, fill(rowWithIdSql, store, TOPIC, "k").replace("${id}", Long.toString(farAbove)));
        commit(msg("k", "after"));
        List<OutboxRecord> rows = Capabilities.reading(store).read(0, List.of(), 10).rows().records();
        assertThat(rows).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .containsExactly("before", "x", "after");
        assertThat(rows.get(1).id()).isEqualTo(farAbove);
        assertThat(rows.get(2).id()).as("a later row takes an id above the writer's").isGreaterThan(farAbove);
    }

    /**
     * Whether the database lets a writer's id above the sequence through and moves the sequence on past it (MySQL's
     * and MariaDB's {@code AUTO_INCREMENT}), rather than refusing it; default false.
     *
     * @return true if such an id is accepted and later rows take higher ids
     */
    protected boolean idsAboveTheSequenceMoveItOn() {
        return false;
    }

    private void assertTheDatabaseRefusesTheId(long id) {
        commit(msg("k", "before"));
        String insert = fill(rowWithIdSql, store, TOPIC, "k").replace("${id}", Long.toString(id));

        assertThatThrownBy(() -> Jdbc.execute(admin, insert)).as("the database refuses %s", insert)
                .isInstanceOf(IllegalStateException.class).hasCauseInstanceOf(java.sql.SQLException.class);

        commit(msg("k", "after"));
        List<OutboxRecord> rows = markAll(UUID.randomUUID());
        assertThat(rows).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .containsExactly("before", "after");
        assertThat(rows.get(1).id()).as("the next id of the sequence").isGreaterThan(rows.get(0).id())
                .isLessThan(rows.get(0).id() + 1_000);
        assertThat(Capabilities.gauges(store).backlog()).isEqualTo(2);
    }

    // ---- the head's age by the database's clock (#42) -------------------------------------------------------

    /**
     * {@link dev.outbox.spi.Gauges#oldestAge()}: empty for an empty outbox; for a row just committed, the database's
     * time now minus its creation time, read in the same statement as the head: zero or more and small, and growing as
     * the database's clock moves on.
     */
    @Test
    void theHeadsAgeIsMeasuredByTheDatabasesClock() {
        assertThat(Capabilities.gauges(store).oldestAge()).isEmpty();
        commit(msg("k", "v"));
        java.time.Duration first = Capabilities.gauges(store).oldestAge().orElseThrow();
        assertThat(first).isBetween(java.time.Duration.ZERO, java.time.Duration.ofMinutes(1));
        dev.outbox.testkit.Await.untilOrFail(() -> Capabilities.gauges(store).oldestAge().orElseThrow()
                        .compareTo(first.plusMillis(50)) > 0, java.time.Duration.ofSeconds(10),
                () -> "the age grows past " + first + ": " + Capabilities.gauges(store).oldestAge());
    }

    // ---- storage fencing under concurrency ------------------------------------------------------------------

    /**
     * The race fencing exists for, on the real server: a deposed leader's purge that runs while a successor's epoch
     * increment is under way (its transaction holds the leader row's lock, not yet committed) waits for it, and once
     * it commits changes nothing and is refused as fenced: after the increment commits, no write of the earlier epoch
     * can commit. (The other order, a fenced write holding the row's share lock first, makes the increment wait for
     * the write's commit: the write then commits before the new epoch exists.)
     */
    @Test
    void aFencedWriteThatMeetsAnEpochIncrementUnderWayWaitsForItAndIsRefused() throws Exception {
        SqlStore sql = (SqlStore) store;
        commit(msg("k", "v"));
        long old = Capabilities.fencing(store).acquireEpoch();
        Store deposed = Capabilities.fencing(store).fencedBy(old);
        long id = Capabilities.marking(deposed).mark(UUID.randomUUID(), 10).records().get(0).id();
        ExecutorService purger = Executors.newSingleThreadExecutor();
        try (Connection successor = admin.getConnection()) {
            successor.setAutoCommit(false);
            try (Statement st = successor.createStatement()) {
                st.executeUpdate("UPDATE " + sql.leaderTable() + " SET epoch = epoch + 1 WHERE id = 1");
            }
            Future<?> purge = purger.submit(() -> deposed.purge(List.of(id)));
            assertThatThrownBy(() -> purge.get(500, TimeUnit.MILLISECONDS)).as("the purge waits for the increment")
                    .isInstanceOf(TimeoutException.class);
            successor.commit();
            assertThatThrownBy(() -> purge.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOfSatisfying(StoreFencedException.class, e -> {
                        assertThat(e.epoch()).isEqualTo(old);
                        assertThat(e.currentEpoch()).isEqualTo(old + 1);
                    });
        } finally {
            purger.shutdownNow();
        }
        assertThat(Capabilities.gauges(store).backlog()).as("the row was not purged").isEqualTo(1);
        Capabilities.fencing(store).fencedBy(old + 1).purge(List.of(id));
        assertThat(Capabilities.gauges(store).backlog()).isZero();
    }

    // ---- the operator's view of parked rows (ParkedRecords) ------------------------------------------------

    /** Parks six rows: keys k0..k5, topics "a" (even) and "b" (odd), reasons "too large i" / "rejected i". */
    private List<OutboxRecord> parkSix() {
        for (int i = 0; i < 6; i++) {
            commit(OutboxMessage.builder(i % 2 == 0 ? "a" : "b", "k" + i).value("v" + i).build());
        }
        List<OutboxRecord> marked = markAll(UUID.randomUUID());
        Map<Long, String> reasons = new HashMap<>();
        for (int i = 0; i < 6; i++) {
            reasons.put(marked.get(i).id(), (i < 3 ? "too large " : "rejected ") + i);
        }
        store.park(reasons);
        return marked;
    }

    @Test
    void parkedRowsAreFilteredByTopicKeyAndReasonAndPagedByIdWithACount() {
        ParkedRecords parked = (ParkedRecords) store;
        List<OutboxRecord> marked = parkSix();

        ParkedQuery page = ParkedQuery.first(4);
        List<ParkedRecord> first = parked.parked(page);
        assertThat(first).extracting(ParkedRecord::key).containsExactly("k0", "k1", "k2", "k3");
        assertThat(parked.parked(page.after(first.get(3).id()))).extracting(ParkedRecord::key)
                .containsExactly("k4", "k5");
        assertThat(parked.parkedCount(page.after(first.get(3).id()))).as("the count ignores paging").isEqualTo(6);

        ParkedQuery topicA = new ParkedQuery("a", null, null, 0, 10);
        assertThat(parked.parked(topicA)).extracting(ParkedRecord::key).containsExactly("k0", "k2", "k4");
        assertThat(parked.parkedCount(topicA)).isEqualTo(3);
        assertThat(parked.parked(new ParkedQuery(null, "k3", null, 0, 10))).extracting(ParkedRecord::id)
                .containsExactly(marked.get(3).id());
        ParkedQuery reason = new ParkedQuery("a", null, "too large", 0, 10);
        assertThat(parked.parked(reason)).extracting(ParkedRecord::key).containsExactly("k0", "k2");
        assertThat(parked.parkedCount(reason)).isEqualTo(2);
        assertThat(parked.parked(new ParkedQuery("c", null, null, 0, 10))).isEmpty();
        assertThat(parked.parkedCount(new ParkedQuery(null, null, "nothing like it", 0, 10))).isZero();
        assertThatThrownBy(() -> ParkedQuery.first(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit");
    }

    @Test
    void parkedRowsCarryTheirMessageIdAndAreFoundByItAndByWhenTheyWereParked() {
        ParkedRecords parked = (ParkedRecords) store;
        List<OutboxRecord> marked = parkSix();

        List<ParkedRecord> all = parked.parked(ParkedQuery.first(10));
        assertThat(all).extracting(ParkedRecord::messageId).as("kept from the outbox row")
                .containsExactlyElementsOf(marked.stream().map(OutboxRecord::messageId).toList()).doesNotContainNull();
        assertThat(parked.parkedMessage(marked.get(2).id()).orElseThrow().record().messageId())
                .isEqualTo(marked.get(2).messageId());
        assertThat(Capabilities.parkedRecords(store).parked(10)).extracting(ParkedRecord::messageId).containsExactlyElementsOf(
                all.stream().map(ParkedRecord::messageId).toList());

        ParkedQuery byId = new ParkedQuery(null, null, null, marked.get(4).messageId(), null, null, 0, 10);
        assertThat(parked.parked(byId)).extracting(ParkedRecord::key).containsExactly("k4");
        assertThat(parked.parkedCount(byId)).isEqualTo(1);
        assertThat(parked.parkedCount(new ParkedQuery("b", null, null, marked.get(4).messageId(), null, null, 0, 10)))
                .as("every filter must match").isZero();
        assertThat(parked.parkedCount(new ParkedQuery(null, null, null, UUID.randomUUID(), null, null, 0, 10))).isZero();

        java.time.Instant at = all.get(0).parkedAt(); // the six were parked by one statement: one time
        java.time.Instant justAfter = at.plusNanos(1_000);
        ParkedQuery around = new ParkedQuery(null, null, null, null, at, justAfter, 0, 10);
        assertThat(parked.parked(around)).hasSize(6);
        assertThat(parked.parkedCount(new ParkedQuery("a", null, null, null, at, null, 0, 10))).isEqualTo(3);
        assertThat(parked.parkedCount(new ParkedQuery(null, null, null, null, justAfter, null, 0, 10)))
                .as("parked from just after").isZero();
        assertThat(parked.parkedCount(new ParkedQuery(null, null, null, null, null, at, 0, 10)))
                .as("parked before, exclusive").isZero();
        assertThatThrownBy(() -> new ParkedQuery(null, null, null, null, justAfter, at, 0, 10))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("parkedFrom must be before");
    }

    @Test
    void aParkedMessageIsReadInFullWithPayloadAndHeaders() {
        ParkedRecords parked = (ParkedRecords) store;
        commit(OutboxMessage.builder(TOPIC, "k1").value(new byte[]{0, 1, (byte) 0xff})
                .header("trace", "abc").header("empty", (byte[]) null).build());
        OutboxRecord r = markAll(UUID.randomUUID()).get(0);
        store.park(Map.of(r.id(), "poison"));

        ParkedMessage m = parked.parkedMessage(r.id()).orElseThrow();

        assertThat(m.record().reason()).isEqualTo("poison");
        assertThat(m.record().key()).isEqualTo("k1");
        assertThat(m.value()).containsExactly(0, 1, 0xff);
        assertThat(m.createTime()).isNotNull();
        assertThat(m.headersProblem()).isNull();
        assertThat(m.headers()).extracting(Header::name).containsExactly("trace", "empty");
        assertThat(new String(m.headers().get(0).value(), StandardCharsets.UTF_8)).isEqualTo("abc");
        assertThat(parked.parkedMessage(r.id() + 1_000_000)).isEmpty();
    }

    @Test
    void discardDeletesOnlyTheGivenParkedRows() {
        ParkedRecords parked = (ParkedRecords) store;
        List<OutboxRecord> marked = parkSix();

        int discarded = parked.discard(List.of(marked.get(0).id(), marked.get(2).id(), 999_999_999L));

        assertThat(discarded).isEqualTo(2);
        assertThat(parked.parked(ParkedQuery.first(10))).extracting(ParkedRecord::key)
                .containsExactly("k1", "k3", "k4", "k5");
        assertThat(parked.discard(List.of())).isZero();
        assertThat(parked.discard(List.of(marked.get(0).id()))).as("discarding twice").isZero();
        assertThat(Capabilities.gauges(store).parkedCount()).isEqualTo(4);
        assertThat(Capabilities.gauges(store).backlog()).isZero();
    }
}
