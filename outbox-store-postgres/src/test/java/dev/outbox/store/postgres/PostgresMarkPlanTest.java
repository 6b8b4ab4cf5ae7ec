package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mark's plan under the statistics a queue table really has: stale row estimates and dead tuples. Each test
 * first proves that it reproduced the bad statistics (the planner's choice for a naive query changes), then that
 * the store's mark still walks the primary key and stays fast.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresMarkPlanTest {
    private static final int ROWS = 50_000;
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static DataSource admin;
    private static HikariDataSource pool;

    @BeforeAll
    static void startDatabase() {
        String url = PostgresTestSupport.database("outbox_mark_plan");
        admin = PostgresTestSupport.admin(url);
        pool = PostgresTestSupport.pool(url, "mark_plan", 4);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    /** A store over a fresh table that autovacuum leaves alone, so the statistics stay as the test left them. */
    private static PostgresStore newStore() {
        PostgresStore store = PostgresStore.builder(pool).table("plan_" + TABLES.incrementAndGet()).build();
        store.createSchema();
        sql("ALTER TABLE " + store.table() + " SET (autovacuum_enabled = false)");
        return store;
    }

    private static void sql(String sql) {
        PostgresTestSupport.execute(admin, sql);
    }

    private static void fill(PostgresStore store, int rows) {
        sql("INSERT INTO " + store.table() + " (topic, key, value) SELECT 'orders', 'key-' || (i % 100),"
                + " convert_to(repeat('x', 100), 'UTF8') FROM generate_series(1, " + rows + ") i");
    }

    /** EXPLAIN of {@code sql} with the leader id and limit bound, on a plain connection with default settings. */
    private static String explainPlain(String sql, UUID leader, int limit) throws SQLException {
        try (Connection c = admin.getConnection();
             PreparedStatement s = c.prepareStatement("EXPLAIN " + sql)) {
            s.setObject(1, leader);
            s.setObject(2, leader);
            s.setInt(3, limit);
            List<String> lines = new ArrayList<>();
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    lines.add(rs.getString(1));
                }
            }
            return String.join("\n", lines);
        }
    }

    /** Runs {@code sql} with a statement timeout; returns whether it finished in time. */
    private static boolean finishesWithin(String sql, UUID leader, int limit, Duration timeout) throws SQLException {
        try (Connection c = admin.getConnection()) {
            try (Statement s = c.createStatement()) {
                s.execute("SET statement_timeout = " + timeout.toMillis());
            }
            try (PreparedStatement s = c.prepareStatement(sql)) {
                s.setObject(1, leader);
                s.setObject(2, leader);
                s.setInt(3, limit);
                s.execute();
                return true;
            } catch (SQLException e) {
                if ("57014".equals(e.getSQLState())) {
                    return false;
                }
                throw e;
            }
        }
    }

    private static void assertWalksThePrimaryKey(String plan, PostgresStore store) {
        String pkey = store.table().replace("\"", "") + "_pkey";
        assertThat(plan).as("plan:%n%s", plan)
                .contains("InitPlan")
                .contains("Index Scan using " + pkey)
                .contains("id = ANY")
                .doesNotContain("Nested Loop")
                .doesNotContain("Seq Scan")
                .doesNotContain("Sort");
    }

    private static Duration timeMark(PostgresStore store, UUID leader, int limit, int expected) {
        long started = System.nanoTime();
        MarkResult result = store.mark(leader, limit);
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        assertThat(result.records()).hasSize(expected);
        return took;
    }

    /**
     * The table was emptied, vacuumed without being truncated (as happens while a dispatcher keeps touching it)
     * and analysed: Postgres believes it holds no rows in many pages. A backlog then arrives before autovacuum
     * analyses again. The textbook {@code WHERE id IN (SELECT ... LIMIT n)} becomes a nested loop that rescans
     * the subquery for every row of the table (tens of seconds for 1,000 rows here); the store's
     * {@code id = ANY(ARRAY(...))} still runs the subquery once.
     */
    @Test
    void aStaleZeroRowEstimateDoesNotTurnTheMarkIntoANestedLoop() throws SQLException {
        PostgresStore store = newStore();
        fill(store, ROWS);
        sql("DELETE FROM " + store.table());
        sql("VACUUM (TRUNCATE false, ANALYZE) " + store.table());
        fill(store, ROWS);
        UUID leader = UUID.randomUUID();
        String naive = store.markSql().replace("WHERE id = ANY(ARRAY(", "WHERE id IN (").replace("LIMIT ?))", "LIMIT ?)");
        assertThat(naive).contains("WHERE id IN (SELECT id FROM").contains("LIMIT ?) RETURNING");

        String naivePlan = explainPlain(naive, leader, 1_000);
        assertThat(naivePlan).as("the stale statistics were reproduced: the naive plan is%n%s", naivePlan)
                .contains("Nested Loop");
        assertThat(finishesWithin(naive, leader, 1_000, Duration.ofSeconds(2)))
                .as("the naive mark of 1,000 rows finishes within 2 s").isFalse();

        assertWalksThePrimaryKey(store.explainMark(leader, 1_000), store);
        Duration took = timeMark(store, leader, 1_000, 1_000);
        assertThat(took).as("the store's mark of 1,000 rows").isLessThan(Duration.ofSeconds(1));
    }

    /**
     * The table was analysed while it held a handful of rows in many pages, so the planner expects a few rows
     * and prefers a full scan and sort to reading the primary key: every mark would read the whole table. The
     * store's mark switches sequential scans off for its own transaction.
     */
    @Test
    void aStaleTinyRowEstimateDoesNotTurnTheMarkIntoAFullScan() throws SQLException {
        PostgresStore store = newStore();
        fill(store, ROWS);
        sql("DELETE FROM " + store.table() + " WHERE id <= " + (ROWS - 10));
        sql("VACUUM (TRUNCATE false, ANALYZE) " + store.table());
        fill(store, ROWS);
        UUID leader = UUID.randomUUID();

        String plainPlan = explainPlain(store.markSql(), leader, 1_000);
        assertThat(plainPlan).as("the stale statistics were reproduced: without the store's settings the plan is"
                + "%n%s", plainPlan).contains("Seq Scan");

        assertWalksThePrimaryKey(store.explainMark(leader, 1_000), store);
        assertThat(timeMark(store, leader, 1_000, 1_000)).isLessThan(Duration.ofSeconds(1));
    }

    /**
     * The cursor read under both stale estimates above, with dead tuples at the head and a gap to recheck: its first
     * branch is a limited walk of the primary key from the cursor (no sort of the table), its gaps are index range
     * scans, and nothing scans the table.
     */
    @Test
    void theReadWalksThePrimaryKeyFromTheCursorUnderStaleStatistics() throws SQLException {
        PostgresStore zero = newStore();
        fill(zero, ROWS);
        sql("DELETE FROM " + zero.table());
        sql("VACUUM (TRUNCATE false, ANALYZE) " + zero.table());
        fill(zero, ROWS);
        PostgresStore tiny = newStore();
        fill(tiny, ROWS);
        sql("DELETE FROM " + tiny.table() + " WHERE id <= " + (ROWS - 10));
        sql("VACUUM (TRUNCATE false, ANALYZE) " + tiny.table());
        fill(tiny, ROWS);
        UUID leader = UUID.randomUUID();
        String naive = zero.markSql().replace("WHERE id = ANY(ARRAY(", "WHERE id IN (").replace("LIMIT ?))", "LIMIT ?)");
        assertThat(explainPlain(naive, leader, 1_000)).as("the stale zero estimate was reproduced")
                .contains("Nested Loop");
        assertThat(explainPlain(tiny.markSql(), leader, 1_000)).as("the stale tiny estimate was reproduced")
                .contains("Seq Scan");
        for (PostgresStore store : List.of(zero, tiny)) {
            long after = ROWS + 5_000;
            List<IdRange> gaps = List.of(new IdRange(ROWS + 10, ROWS + 20), IdRange.of(ROWS + 4_000));
            String plan = store.explainRead(after, gaps, 1_000);
            String pkey = store.table().replace("\"", "") + "_pkey";
            assertThat(plan).as("plan:%n%s", plan)
                    .containsPattern("Limit .*\\n\\s*->  Index Scan using " + pkey + " on \\S+ .*\\n\\s*"
                            + "Index Cond: \\(id > ")
                    .contains("Index Cond: ((id >= r.lo) AND (id <= LEAST(r.hi, ")
                    // No sort of the whole result on top: the rows, headers and values included, would be copied
                    // once more in the server (the store puts them in id order in memory).
                    .doesNotStartWith("Sort")
                    .doesNotContain("Seq Scan")
                    .doesNotContain("Bitmap");
            long started = System.nanoTime();
            ReadResult result = store.read(after, gaps, 1_000);
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            assertThat(result.rows().records()).hasSize(1_000);
            assertThat(result.rows().records().get(0).id()).isEqualTo(ROWS + 10);
            assertThat(took).as("the read of 1,000 rows").isLessThan(Duration.ofSeconds(1));
        }
    }

    /**
     * Marking and purging leaves dead tuples at the head of the table and of its primary key; with autovacuum
     * off, none are removed. The mark still reads the primary key from its head and takes the next batch fast.
     */
    @Test
    void deadTuplesFromMarkAndPurgeDoNotChangeThePlan() {
        PostgresStore store = newStore();
        fill(store, ROWS);
        sql("ANALYZE " + store.table());
        UUID leader = UUID.randomUUID();
        Duration first = null;
        for (int batch = 0; batch < 30; batch++) {
            long started = System.nanoTime();
            List<OutboxRecord> marked = store.mark(leader, 1_000).records();
            if (first == null) {
                first = Duration.ofNanos(System.nanoTime() - started);
            }
            assertThat(marked).hasSize(1_000);
            store.purge(marked.stream().map(OutboxRecord::id).toList());
        }
        // Also leave rows marked by an earlier leader in place, which a new leader walks over and steals.
        store.mark(leader, 1_000);
        UUID next = UUID.randomUUID();

        assertWalksThePrimaryKey(store.explainMark(next, 1_000), store);
        Duration last = timeMark(store, next, 1_000, 1_000);
        assertThat(last).as("mark after 30,000 dead rows (the first mark took %s)", first)
                .isLessThan(Duration.ofSeconds(1));
        assertThat(store.backlog()).isEqualTo(ROWS - 30_000);
    }
}
