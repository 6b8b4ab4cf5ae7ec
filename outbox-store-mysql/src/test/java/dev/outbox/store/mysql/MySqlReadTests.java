package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.store.sql.LateCommitWindow;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link MySqlStore#read}, the cursor harvest's read, against a real server: committed rows only, in id order, above
 * the cursor and in recheck ranges; never blocked by an open writer; ordinals a late-commit window apart; a range
 * scan of the primary key. Run for MySQL 8 and MariaDB by the subclasses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class MySqlReadTests {
    private final AtomicInteger tables = new AtomicInteger();
    private DataSource admin;
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_read_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        pool = MySqlTestSupport.pool(kind(), url, "read_test", 6);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    /** A store on a table of its own, created; reads fail fast if anything makes them wait. */
    private MySqlStore newStore(Duration lateCommitWindow) {
        MySqlStore store = MySqlStore.builder(pool).table("r_" + tables.incrementAndGet())
                .statementTimeout(Duration.ofSeconds(5)).lateCommitWindow(lateCommitWindow).build();
        store.createSchema();
        return store;
    }

    private MySqlStore newStore() {
        return newStore(MySqlStore.DEFAULT_LATE_COMMIT_WINDOW);
    }

    /** Commits one message per value, each in its own transaction; returns their ids. */
    private List<Long> commit(MySqlStore store, String... values) {
        List<Long> ids = new ArrayList<>();
        for (String value : values) {
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, OutboxMessage.of("t", "k-" + value, value));
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            ids.add(MySqlTestSupport.queryLong(admin, "SELECT MAX(id) FROM " + store.table()));
        }
        return ids;
    }

    /** Inserts {@code count} rows (at most 10,000) in one statement. */
    private void insertRows(MySqlStore store, int count) {
        String digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
                + " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";
        MySqlTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, `key`, value)"
                + " SELECT 't', CONCAT('k', a.d), 'v' FROM " + digits + " a, " + digits + " b, " + digits + " c, "
                + digits + " d LIMIT " + count);
    }

    /** A connection in a transaction that has written {@code value} and is left open. */
    private Connection openWith(MySqlStore store, String value) throws SQLException {
        Connection c = pool.getConnection();
        c.setAutoCommit(false);
        store.publisher().publish(c, OutboxMessage.of("t", "k-" + value, value));
        return c;
    }

    private static long lastInsertId(Connection c) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT LAST_INSERT_ID()"); ResultSet rs = s.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static List<String> values(ReadResult result) {
        return result.rows().records().stream()
                .map(r -> new String(r.message().value(), StandardCharsets.UTF_8)).toList();
    }

    @Test
    void readsCommittedRowsAboveTheCursorInIdOrderUpToTheLimitWhoeverMarkedThemAndNeverParkedOnes() {
        MySqlStore store = newStore();
        assertThat(store.capability(dev.outbox.spi.CursorHarvest.class).isPresent()).isTrue();
        List<Long> ids = commit(store, "a", "b", "c", "d", "e", "f", "g");
        UUID leader = UUID.randomUUID();
        store.mark(leader, 1); // a is marked
        Instant later = Instant.now().plusSeconds(3_600);
        store.retryLater(Map.of(ids.get(1), later)); // b waits for its next attempt
        store.park(Map.of(ids.get(4), "parked by the test")); // e is parked

        ReadResult first = store.read(0, List.of(), 3);
        assertThat(values(first)).containsExactly("a", "b", "c");
        assertThat(first.rows().records().get(0).leaderId()).isEqualTo(leader);
        assertThat(first.rows().records().get(1).leaderId()).as("unmarked").isNull();
        assertThat(first.rows().records().get(1).attempts()).isEqualTo(1);
        assertThat(first.rows().records().get(1).nextAttemptAt()).isNotNull();
        assertThat(first.rows().records()).allSatisfy(r -> assertThat(r.messageId()).isNotNull());
        assertThat(first.maxId()).isEqualTo(ids.get(2));

        assertThat(values(store.read(first.maxId(), List.of(), 100))).containsExactly("d", "f", "g");
        assertThat(store.read(ids.get(6), List.of(), 100).rows().isEmpty()).isTrue();
        assertThat(store.backlog()).as("a read changes nothing").isEqualTo(6);
        assertThat(values(store.read(0, List.of(), 100))).containsExactly("a", "b", "c", "d", "f", "g");
    }

    @Test
    void recheckRangesReturnTheirCommittedRowsBelowTheCursorLowestIdsFirst() {
        MySqlStore store = newStore();
        List<Long> ids = commit(store, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9");
        List<IdRange> recheck = List.of(IdRange.of(ids.get(5)), new IdRange(ids.get(1), ids.get(2)),
                new IdRange(ids.get(2), ids.get(3)), IdRange.of(ids.get(6)));

        assertThat(values(store.read(ids.get(7), recheck, 100))).containsExactly("1", "2", "3", "5", "6", "8", "9");
        assertThat(values(store.read(ids.get(7), recheck, 4))).containsExactly("1", "2", "3", "5");
        assertThat(values(store.read(ids.get(9), List.of(IdRange.of(ids.get(0))), 100))).containsExactly("0");
        assertThat(values(store.read(ids.get(9), List.of(new IdRange(ids.get(9) + 5, ids.get(9) + 9)), 100)))
                .isEmpty();
        assertThatThrownBy(() -> store.read(0, null, 10)).hasMessageContaining("recheck");
        assertThatThrownBy(() -> store.read(-1, List.of(), 10)).hasMessageContaining("after");
        assertThatThrownBy(() -> store.read(0, List.of(), 0)).hasMessageContaining("limit");
    }

    @Test
    void moreRangesThanOneStatementCarriesAreReadHighestFirstAndTheLowestIdsKept() {
        MySqlStore store = newStore();
        insertRows(store, 2_600);
        List<Long> all = new ArrayList<>();
        for (OutboxRecord r : store.read(0, List.of(), 5_000).rows().records()) {
            all.add(r.id());
        }
        assertThat(all).hasSize(2_600);
        List<IdRange> recheck = new ArrayList<>();
        List<Long> expected = new ArrayList<>();
        for (int i = 0; i < 2_400; i += 2) { // 1,200 ranges of one id: three statements
            recheck.add(IdRange.of(all.get(i)));
            expected.add(all.get(i));
        }
        long after = all.get(2_499);
        expected.addAll(all.subList(2_500, 2_600));
        assertThat(recheck.size()).isGreaterThan(2 * MySqlStore.MAX_RECHECK_RANGES_PER_STATEMENT);

        assertThat(store.read(after, recheck, 5_000).rows().records()).extracting(OutboxRecord::id)
                .containsExactlyElementsOf(expected);
        assertThat(store.read(after, recheck, 700).rows().records()).extracting(OutboxRecord::id)
                .containsExactlyElementsOf(expected.subList(0, 700));
    }

    @Test
    void anOpenWritersIdIsPassedWithoutWaitingAndItsRowReadFromTheRecheckOnceCommitted() throws SQLException {
        MySqlStore store = newStore();
        List<Long> before = commit(store, "before");
        try (Connection early = openWith(store, "early"); Connection doomed = openWith(store, "doomed")) {
            long earlyId = lastInsertId(early);
            long doomedId = lastInsertId(doomed);
            List<Long> after = commit(store, "after");
            assertThat(earlyId).isBetween(before.get(0), after.get(0));
            assertThat(doomedId).isBetween(before.get(0), after.get(0));

            ReadResult first = store.read(0, List.of(), 10);
            assertThat(values(first)).as("the open writers' rows are not visible, and the read did not wait")
                    .containsExactly("before", "after");
            List<IdRange> gaps = List.of(new IdRange(before.get(0) + 1, after.get(0) - 1));
            assertThat(store.read(after.get(0), gaps, 10).rows().isEmpty()).as("still open").isTrue();

            doomed.rollback();
            early.commit();
            ReadResult late = store.read(after.get(0), gaps, 10);
            assertThat(values(late)).containsExactly("early");
            assertThat(late.rows().records().get(0).id()).isEqualTo(earlyId);
            assertThat(values(store.read(0, List.of(), 10))).as("never the rolled-back row")
                    .containsExactly("before", "early", "after");
        }
    }

    /**
     * The harvest deletes what it read while applications keep inserting: neither the purge nor a park waits for an
     * open writer's uncommitted row, even on a table the optimizer believes small (where a plain
     * {@code DELETE ... WHERE id IN (...)} scans the table and waits for every row's lock). The store's statement
     * timeout, 5 s, fails a call that waits.
     */
    @Test
    void purgeAndParkAreNotHeldUpByAnOpenWriter() throws SQLException {
        MySqlStore store = newStore();
        List<Long> ids = new ArrayList<>(commit(store, "a", "b", "c"));
        try (Connection open = openWith(store, "open")) {
            ids.addAll(commit(store, "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s"));
            store.retryLater(Map.of(ids.get(0), Instant.now(), ids.get(17), Instant.now()));
            store.park(Map.of(ids.get(1), "parked while a writer is open", ids.get(18), "also"));
            store.purge(ids);
            assertThat(values(store.read(0, List.of(), 100))).isEmpty();
            open.commit();
        }
        assertThat(values(store.read(0, List.of(), 100))).containsExactly("open");
        assertThat(store.parked(10)).hasSize(2);
    }

    @Test
    void theOrdinalsAreMonotonicMillisecondsTheLateCommitWindowApart() {
        MySqlStore store = newStore(Duration.ofSeconds(7));
        assertThat(store.lateCommitWindow()).isEqualTo(Duration.ofSeconds(7));
        commit(store, "x");
        long before = LateCommitWindow.monotonicMillis();
        ReadResult result = store.read(0, List.of(), 10);
        long after = LateCommitWindow.monotonicMillis();

        assertThat(result.horizon()).as("the time before the read").isBetween(before, after);
        assertThat(result.gapToken() - 7_000).as("the time after the read, plus the window")
                .isBetween(result.horizon(), after);
        ReadResult next = store.read(0, List.of(), 10);
        assertThat(next.horizon()).isGreaterThanOrEqualTo(result.gapToken() - 7_000);
        assertThat(newStore().read(0, List.of(), 1).gapToken() - LateCommitWindow.monotonicMillis())
                .as("the default window, 60 s").isBetween(59_000L, 60_000L);
    }

    @Test
    void aBadLateCommitWindowIsRejectedNamingIt() {
        MySqlStore.Builder builder = MySqlStore.builder(pool);
        assertThatThrownBy(() -> builder.lateCommitWindow(null)).hasMessageContaining("lateCommitWindow");
        for (Duration bad : List.of(Duration.ZERO, Duration.ofMillis(-5), Duration.ofNanos(999_999),
                Duration.ofDays(2))) {
            assertThatThrownBy(() -> builder.lateCommitWindow(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lateCommitWindow").hasMessageContaining(bad.toString());
        }
        assertThat(builder.lateCommitWindow(Duration.ofMillis(1)).build().lateCommitWindow())
                .isEqualTo(Duration.ofMillis(1));
    }

    @Test
    void malformedRowsAreRejectedAndRowsWithoutAMessageIdGetOneStoredFirst() {
        MySqlStore store = newStore();
        List<Long> ids = commit(store, "a", "b", "c");
        MySqlTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, `key`, value, headers)"
                + " VALUES ('t', 'bad', 'x', '{\"name\": \"a\"}')");
        MySqlTestSupport.execute(admin, "UPDATE " + store.table() + " SET message_id = NULL WHERE id IN ("
                + ids.get(0) + ", " + ids.get(2) + ")"); // rows of a table older than the column

        MarkResult rows = store.read(0, List.of(), 10).rows();
        assertThat(rows.records()).extracting(OutboxRecord::key).containsExactly("k-a", "k-b", "k-c");
        assertThat(rows.rejected()).extracting(MarkResult.Rejected::key).containsExactly("bad");
        assertThat(rows.rejected().get(0).reason()).contains("headers is not a JSON array");
        assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.table()
                + " WHERE message_id IS NULL")).as("stored before the read returned").isZero();
        List<OutboxRecord> again = store.read(0, List.of(), 10).rows().records();
        assertThat(again).extracting(OutboxRecord::messageId)
                .containsExactlyElementsOf(rows.records().stream().map(OutboxRecord::messageId).toList())
                .doesNotContainNull().doesNotHaveDuplicates();
        assertThat(again.get(0).messageId().version()).isEqualTo(7);
    }

    /**
     * The read's statement is a range scan of the primary key, in id order without a sort, on both servers, also
     * with as many ranges as one statement carries and when most of the table matches. (The columns {@code type},
     * {@code key} and {@code Extra} are what MySQL's and MariaDB's tabular {@code EXPLAIN} share.)
     */
    @Test
    void theReadIsARangeScanOfThePrimaryKeyWithoutASort() throws SQLException {
        MySqlStore store = newStore();
        insertRows(store, 3_000);
        MySqlTestSupport.execute(admin, "ANALYZE TABLE " + store.table());
        long min = MySqlTestSupport.queryLong(admin, "SELECT MIN(id) FROM " + store.table());
        for (int ranges : new int[]{0, 3, MySqlStore.MAX_RECHECK_RANGES_PER_STATEMENT}) {
            for (long after : new long[]{0, min + 2_000}) {
                List<Long> values = new ArrayList<>();
                values.add(after);
                for (int i = 0; i < ranges; i++) {
                    values.add(min + 3L * i);
                    values.add(min + 3L * i + 1);
                }
                values.add(1_000L);
                assertPrimaryKeyRangeScan(store.readSql(true, ranges), values, ranges + " ranges above " + after);
            }
        }
        List<Long> values = new ArrayList<>(List.of(min + 10, min + 20, min + 30, min + 40, 1_000L));
        assertPrimaryKeyRangeScan(store.readSql(false, 2), values, "ranges only");
    }

    /** The purge's {@code DELETE} looks its ids up in the primary key, even where the optimizer would scan. */
    @Test
    void thePurgeIsAPrimaryKeyLookupOnATableTheOptimizerBelievesSmall() throws SQLException {
        MySqlStore store = newStore();
        insertRows(store, 20);
        long min = MySqlTestSupport.queryLong(admin, "SELECT MIN(id) FROM " + store.table());
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 19; i++) {
            ids.add(min + i);
        }
        String bare = store.table().substring(1, store.table().length() - 1);
        assertPrimaryKeyRangeScan(MySqlStatements.deleteSql(store.table(), bare, ids.size()), ids, "purge");
    }

    private void assertPrimaryKeyRangeScan(String sql, List<Long> values, String what) throws SQLException {
        try (Connection c = admin.getConnection(); PreparedStatement s = c.prepareStatement("EXPLAIN " + sql)) {
            for (int i = 0; i < values.size(); i++) {
                s.setLong(i + 1, values.get(i));
            }
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).isTrue();
                String plan = rs.getString("type") + " / " + rs.getString("key") + " / " + rs.getString("Extra");
                assertThat(rs.getString("type")).as("%s: %s", what, plan).isEqualTo("range");
                assertThat(rs.getString("key")).as("%s: %s", what, plan).isEqualTo("PRIMARY");
                assertThat(String.valueOf(rs.getString("Extra"))).as("%s: %s", what, plan)
                        .doesNotContainIgnoringCase("filesort").doesNotContainIgnoringCase("temporary");
                assertThat(rs.next()).as("one table, one line").isFalse();
            }
        }
    }
}
