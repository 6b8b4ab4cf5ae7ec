package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link PostgresStore#read}, the cursor harvest's read, on a real Postgres: which rows it returns, and what its
 * gap token and horizon promise about ids it passed while their writers were still open.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresStoreReadTest {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static DataSource admin;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        String url = PostgresTestSupport.database("outbox_read");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "read_store", 4);
        appPool = PostgresTestSupport.pool(url, "read_app", 6);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    private static PostgresStore newStore() {
        PostgresStore store = PostgresStore.builder(storePool).table("read_" + TABLES.incrementAndGet()).build();
        store.createSchema();
        return store;
    }

    private static Connection begin() throws SQLException {
        Connection c = appPool.getConnection();
        c.setAutoCommit(false);
        return c;
    }

    private static void commit(PostgresStore store, String... values) throws SQLException {
        try (Connection c = begin()) {
            for (String value : values) {
                store.publisher().publish(c, OutboxMessage.of("orders", "k", value));
            }
            c.commit();
        }
    }

    private static List<String> values(ReadResult result) {
        return result.rows().records().stream().map(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .toList();
    }

    private static List<Long> ids(ReadResult result) {
        return result.rows().records().stream().map(OutboxRecord::id).toList();
    }

    /** The transaction id of {@code c}'s open transaction (assigning one if it has none yet). */
    private static long xid(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT CAST(CAST(pg_current_xact_id() AS text) AS bigint)")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void readsCommittedRowsAboveTheCursorInIdOrderUpToTheLimit() throws SQLException {
        PostgresStore store = newStore();
        assertThat(store.capability(dev.outbox.spi.CursorHarvest.class).isPresent()).isTrue();
        assertThat(store.read(0, List.of(), 10).size()).isZero();
        commit(store, "a", "b", "c", "d", "e");

        ReadResult all = store.read(0, List.of(), 10);
        assertThat(values(all)).containsExactly("a", "b", "c", "d", "e");
        List<Long> ids = ids(all);
        assertThat(all.maxId()).isEqualTo(ids.get(4));
        assertThat(values(store.read(0, List.of(), 2))).containsExactly("a", "b");
        assertThat(values(store.read(ids.get(1), List.of(), 2))).containsExactly("c", "d");
        assertThat(values(store.read(ids.get(4), List.of(), 10))).isEmpty();
        assertThat(store.read(0, List.of(), 10).rows().records()).as("a read changes nothing")
                .isEqualTo(all.rows().records());
        assertThat(all.rows().records()).allSatisfy(r -> {
            assertThat(r.leaderId()).isNull();
            assertThat(r.messageId()).isNotNull();
        });

        assertThatThrownBy(() -> store.read(0, List.of(), 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit");
        assertThatThrownBy(() -> store.read(-1, List.of(), 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("after");
        assertThatThrownBy(() -> store.read(0, null, 1)).hasMessageContaining("recheck");
    }

    @Test
    void readsRowsInRecheckRangesFirstAndNeverParkedRows() throws SQLException {
        PostgresStore store = newStore();
        commit(store, "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8");
        List<Long> ids = ids(store.read(0, List.of(), 10));
        store.park(Map.of(ids.get(2), "bad"));

        ReadResult result = store.read(ids.get(5), List.of(new IdRange(ids.get(1), ids.get(2)),
                IdRange.of(ids.get(4)), new IdRange(ids.get(4), ids.get(4))), 3);

        assertThat(values(result)).as("v3 is parked, v5 is named twice, v7 is above the cursor")
                .containsExactly("v2", "v5", "v7");
        assertThat(values(store.read(ids.get(5), List.of(new IdRange(ids.get(0), ids.get(7))), 10)))
                .as("a range reaching above the cursor").containsExactly("v1", "v2", "v4", "v5", "v6", "v7", "v8");
        assertThat(values(store.read(ids.get(7), List.of(new IdRange(ids.get(7) + 1, ids.get(7) + 100)), 10)))
                .as("a range above the cursor adds nothing").isEmpty();
    }

    @Test
    void aRowWrittenByHandWithoutAMessageIdGetsOneStoredBeforeItIsReturned() {
        PostgresStore store = newStore();
        PostgresTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, key, value, message_id)"
                + " VALUES ('orders', 'k', 'old', NULL), ('orders', 'k', 'new', DEFAULT)");

        List<OutboxRecord> records = store.read(0, List.of(), 10).rows().records();

        assertThat(records).hasSize(2);
        UUID stored = UUID.fromString(queryText("SELECT CAST(message_id AS text) FROM " + store.table()
                + " WHERE id = " + records.get(0).id()));
        assertThat(records.get(0).messageId()).isEqualTo(stored);
        assertThat(stored.version()).isEqualTo(7);
        assertThat(store.read(0, List.of(), 10).rows().records().get(0).messageId()).isEqualTo(stored);
    }

    @Test
    void aRowThatIsNotAValidMessageIsReturnedAsRejected() {
        PostgresStore store = newStore();
        PostgresTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, key, value, header_names,"
                + " header_values) VALUES ('orders', 'good', 'v', '{}', '{}'),"
                + " ('orders', 'bad', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])");

        MarkResult rows = store.read(0, List.of(), 10).rows();

        assertThat(rows.records()).extracting(OutboxRecord::key).containsExactly("good");
        assertThat(rows.rejected()).singleElement().satisfies(r -> {
            assertThat(r.key()).isEqualTo("bad");
            assertThat(r.reason()).contains("header_names has 2 elements but header_values has 1");
        });
    }

    /**
     * T0 takes an id and stays open while T1 takes a higher id and commits. The read returns T1's row only; its
     * token is above T0's transaction id, and no read's horizon reaches the token while T0 is open. Once T0 has
     * committed, the next read's horizon passes the token, and a read of the gap returns T0's row.
     */
    @Test
    void aGapStaysOpenWhileItsWriterRunsAndIsReadOnceItCommits() throws SQLException {
        PostgresStore store = newStore();
        commit(store, "before");
        long head = store.read(0, List.of(), 10).maxId();
        ReadResult first;
        long gapId;
        try (Connection t0 = begin()) {
            store.publisher().publish(t0, OutboxMessage.of("orders", "k", "late"));
            long t0Xid = xid(t0);
            commit(store, "other");

            first = store.read(head, List.of(), 10);
            assertThat(values(first)).containsExactly("other");
            gapId = first.maxId() - 1;
            assertThat(gapId).isGreaterThan(head);
            assertThat(first.gapToken()).as("token vs T0's xid").isGreaterThan(t0Xid);
            assertThat(first.horizon()).isLessThanOrEqualTo(t0Xid);

            commit(store, "more");
            ReadResult whileOpen = store.read(first.maxId(), List.of(IdRange.of(gapId)), 10);
            assertThat(values(whileOpen)).containsExactly("more");
            assertThat(whileOpen.horizon()).as("horizon while T0 is open").isLessThan(first.gapToken());

            t0.commit();
        }
        awaitHorizon(store, first.gapToken());
        ReadResult gap = store.read(first.maxId(), List.of(IdRange.of(gapId)), 10);
        assertThat(values(gap)).containsExactly("late", "more");
    }

    /**
     * Waits until a read's horizon reaches {@code token}: every transaction that could hold an id the read with that
     * token passed has ended. Other transactions of the cluster (autovacuum's, other tests') hold it back for a moment
     * at most.
     */
    private static void awaitHorizon(PostgresStore store, long token) {
        Await.untilOrFail(() -> store.read(0, List.of(), 1).horizon() >= token, Duration.ofSeconds(30),
                () -> "horizon " + store.read(0, List.of(), 1).horizon() + " below token " + token);
    }

    @Test
    void aGapWhoseWriterRollsBackIsFinalOnceItHasEnded() throws SQLException {
        PostgresStore store = newStore();
        ReadResult first;
        try (Connection t0 = begin()) {
            store.publisher().publish(t0, OutboxMessage.of("orders", "k", "rolled-back"));
            commit(store, "other");
            first = store.read(0, List.of(), 10);
            assertThat(values(first)).containsExactly("other");
            assertThat(store.read(first.maxId(), List.of(IdRange.of(first.maxId() - 1)), 10).horizon())
                    .isLessThan(first.gapToken());
            t0.rollback();
        }
        awaitHorizon(store, first.gapToken());
        assertThat(values(store.read(first.maxId(), List.of(IdRange.of(first.maxId() - 1)), 10))).isEmpty();
    }

    /**
     * The case that rules out the snapshot's {@code xmax} as the token: T1 takes its transaction id first, T0 takes
     * a later transaction id and then an outbox id, T1 then takes a higher outbox id and commits. T1 is then the
     * latest completed transaction, so the read's {@code xmax} is T0's own transaction id, which the snapshot does
     * not list as running: a later read's {@code xmin} would equal it while T0 is still open. The read's token must
     * be above T0's transaction id.
     */
    @Test
    void theTokenCoversAWriterThatTookItsTransactionIdAfterTheLastCompletedOne() throws SQLException {
        PostgresStore store = newStore();
        commit(store, "before");
        long head = store.read(0, List.of(), 10).maxId();
        try (Connection t1 = begin(); Connection t0 = begin()) {
            long t1Xid = xid(t1);
            store.publisher().publish(t0, OutboxMessage.of("orders", "k0", "late"));
            long t0Xid = xid(t0);
            assertThat(t0Xid).isGreaterThan(t1Xid);
            store.publisher().publish(t1, OutboxMessage.of("orders", "k1", "other"));
            t1.commit();

            ReadResult first = store.read(head, List.of(), 10);
            assertThat(values(first)).containsExactly("other");
            assertThat(first.gapToken()).as("token vs T0's xid %s (T1's: %s)", t0Xid, t1Xid).isGreaterThan(t0Xid);
            ReadResult second = store.read(first.maxId(), List.of(IdRange.of(first.maxId() - 1)), 10);
            assertThat(second.horizon()).as("horizon while T0 is open").isLessThan(first.gapToken());
            t0.commit();
        }
        ReadResult last = store.read(head + 2, List.of(IdRange.of(head + 1)), 10);
        assertThat(values(last)).containsExactly("late");
    }

    @Test
    void theGapTokenIsTheNextTransactionIdAcrossTheWrapOfThe32BitCounter() {
        long epoch = 1L << 32;
        assertThat(PostgresHarvest.gapToken(5 * epoch + 100, 100 - 3)).isEqualTo(5 * epoch + 100);
        assertThat(PostgresHarvest.gapToken(5 * epoch + 100, 107 - 3)).isEqualTo(5 * epoch + 107);
        // age is a signed 32-bit difference from xid 3
        assertThat(PostgresHarvest.gapToken(5 * epoch + 0xFFFF_FFF0L, (int) (0xFFFF_FFF5L - 3)))
                .isEqualTo(5 * epoch + 0xFFFF_FFF5L);
        assertThat(PostgresHarvest.gapToken(5 * epoch + 0xFFFF_FFF0L, (int) (epoch + 4 - 3)))
                .as("the next id in the next epoch").isEqualTo(6 * epoch + 4);
    }

    private static String queryText(String sql) {
        try (Connection c = admin.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
