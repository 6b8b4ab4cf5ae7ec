package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StoreException;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * How marks lock: they never block application inserts (no gap locks, at whatever isolation level the session
 * has), and connections killed in the middle of a mark or purge lose nothing. Run for MySQL 8 and MariaDB by the
 * subclasses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
abstract class MySqlLockingTests {
    private static final Logger log = LoggerFactory.getLogger(MySqlLockingTests.class);
    private final AtomicInteger tables = new AtomicInteger();
    private String url;
    private DataSource admin;
    private HikariDataSource storePool;
    private HikariDataSource appPool;
    private ExecutorService threads;

    abstract JdbcServer.Kind kind();

    private String suffix() {
        return kind().name().toLowerCase(Locale.ROOT);
    }

    @BeforeAll
    void startDatabase() {
        url = MySqlTestSupport.database(kind(), "outbox_locking_" + suffix());
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "locking_store", 6);
        appPool = MySqlTestSupport.pool(kind(), url, "locking_app", 6);
        threads = Executors.newCachedThreadPool();
    }

    @AfterAll
    void close() throws InterruptedException {
        threads.shutdownNow();
        threads.awaitTermination(10, TimeUnit.SECONDS);
        storePool.close();
        appPool.close();
    }

    private MySqlStore newStore(DataSource pool) {
        MySqlStore store = MySqlStore.builder(pool).table("lock_" + tables.incrementAndGet()).build();
        store.createSchema();
        return store;
    }

    private void write(MySqlStore store, int count) throws SQLException {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(OutboxMessage.of("t", "k" + (i % 50), "v" + i));
        }
        try (Connection c = appPool.getConnection()) {
            store.publisher().publish(c, batch);
        }
    }

    /** Inserts one message in an application transaction at the server's default isolation level. */
    private long insertOne(MySqlStore store, int lockWaitTimeoutSeconds) throws SQLException {
        long started = System.nanoTime();
        try (Connection c = appPool.getConnection()) {
            try (Statement s = c.createStatement()) {
                s.execute("SET SESSION innodb_lock_wait_timeout = " + lockWaitTimeoutSeconds);
            }
            c.setAutoCommit(false);
            try {
                store.publisher().publish(c, OutboxMessage.of("t", "app", "inserted while marking"));
                c.commit();
            } finally {
                c.rollback();
                c.setAutoCommit(true);
                try (Statement s = c.createStatement()) {
                    s.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
                }
            }
        }
        return System.nanoTime() - started;
    }

    private <T> T within(Duration timeout, Callable<T> work) throws Exception {
        Future<T> future = threads.submit(work);
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new AssertionError("blocked for more than " + timeout, e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    // ---- gap locks ----------------------------------------------------------------------------------------

    @Test
    void aMarkHoldingItsLocksDoesNotBlockApplicationInsertsAtTheTail() throws Exception {
        MySqlStore store = newStore(storePool);
        write(store, 200);
        List<Long> insertNanos = new ArrayList<>();

        // The mark takes every row, so its scan reaches the end of the table: at REPEATABLE READ a locking scan
        // would lock the gap after the last row, where every insert goes.
        MarkResult result = store.mark(UUID.randomUUID(), 1_000, handle -> {
            try {
                insertNanos.add(within(Duration.ofSeconds(20), () -> insertOne(store, 2)));
                insertNanos.add(within(Duration.ofSeconds(20), () -> insertOne(store, 2)));
            } catch (Exception e) {
                throw new AssertionError("an application insert failed while a mark held its locks: " + e, e);
            }
        });

        assertThat(result.records()).hasSize(200);
        assertThat(insertNanos).hasSize(2).allSatisfy(nanos ->
                assertThat(Duration.ofNanos(nanos)).isLessThan(Duration.ofSeconds(2)));
        assertThat(store.mark(UUID.randomUUID(), 1_000).records()).as("the inserts committed").hasSize(202);
    }

    @Test
    void aPartialMarkHoldingItsLocksDoesNotBlockInsertsEither() throws Exception {
        MySqlStore store = newStore(storePool);
        write(store, 300);
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> first = store.mark(leader, 50).records(); // skipped by this leader's next mark

        MarkResult result = store.mark(leader, 100, handle -> {
            try {
                within(Duration.ofSeconds(20), () -> insertOne(store, 2));
            } catch (Exception e) {
                throw new AssertionError("an application insert failed while a mark held its locks: " + e, e);
            }
        });

        assertThat(result.records()).hasSize(100);
        assertThat(result.records().get(0).id()).isGreaterThan(first.get(first.size() - 1).id());
    }

    /**
     * The control experiment: the textbook locking mark at InnoDB's default isolation level does block inserts.
     * Shows that the tests above would notice gap locks.
     */
    @Test
    void aLockingScanAtRepeatableReadWouldBlockInsertsWhichIsWhyTheStoreDoesNotUseOne() throws Exception {
        MySqlStore store = newStore(storePool);
        write(store, 200);
        try (Connection marker = admin.getConnection()) {
            try (Statement s = marker.createStatement()) {
                s.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
            }
            marker.setAutoCommit(false);
            try (Statement s = marker.createStatement()) {
                s.executeQuery("SELECT id FROM " + store.table() + " WHERE leader_id <> X'01' ORDER BY id LIMIT 1000"
                        + " FOR UPDATE").close();
            }

            assertThatThrownBy(() -> within(Duration.ofSeconds(20), () -> insertOne(store, 1)))
                    .as("an insert behind a next-key lock on the end of the table")
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue())
                    .hasMessageContaining("1205");
            marker.rollback();
        }
    }

    @Test
    void applicationInsertsStayFastWhileMarksRunContinuously() throws Exception {
        MySqlStore store = newStore(storePool);
        write(store, 5_000);
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong marks = new AtomicLong();
        AtomicLong marked = new AtomicLong();
        Future<?> marker = threads.submit(() -> {
            while (running.get()) {
                // a fresh leader id each time: every mark takes over 1,000 rows, updating all of them
                marked.addAndGet(store.mark(UUID.randomUUID(), 1_000).size());
                marks.incrementAndGet();
            }
            return null;
        });
        List<Long> latencies = new ArrayList<>();
        List<Future<List<Long>>> writers = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        for (int w = 0; w < 3; w++) {
            writers.add(threads.submit(() -> {
                List<Long> mine = new ArrayList<>();
                while (System.nanoTime() - deadline < 0) {
                    mine.add(insertOne(store, 50));
                }
                return mine;
            }));
        }
        try {
            for (Future<List<Long>> writer : writers) {
                latencies.addAll(writer.get(60, TimeUnit.SECONDS));
            }
        } finally {
            running.set(false);
        }
        marker.get(30, TimeUnit.SECONDS);

        latencies.sort(null);
        Duration worst = Duration.ofNanos(latencies.get(latencies.size() - 1));
        Duration p99 = Duration.ofNanos(latencies.get((int) (latencies.size() * 0.99)));
        Duration median = Duration.ofNanos(latencies.get(latencies.size() / 2));
        String report = String.format(Locale.ROOT, "%s: %d application inserts while %d marks took %d rows:"
                        + " median %.2f ms, p99 %.2f ms, worst %.2f ms", kind(), latencies.size(), marks.get(),
                marked.get(), median.toNanos() / 1e6, p99.toNanos() / 1e6, worst.toNanos() / 1e6);
        System.out.println(report);
        log.info(report);
        assertThat(marks.get()).as("marks ran").isGreaterThan(1);
        assertThat(latencies).as("inserts ran").hasSizeGreaterThan(10);
        // A generous bound: a lock wait would last innodb_lock_wait_timeout (50 s here).
        assertThat(worst).as(report).isLessThan(Duration.ofSeconds(5));
    }

    // ---- killed connections -------------------------------------------------------------------------------

    @Test
    void aConnectionKilledBeforeTheMarkCommitsLosesNothing() throws Exception {
        String user = "killed_mark_" + suffix();
        try (HikariDataSource pool = MySqlTestSupport.pool(kind(), url, user, 2)) {
            MySqlStore store = newStore(pool);
            write(store, 100);
            UUID doomed = UUID.randomUUID();

            assertThatThrownBy(() -> store.mark(doomed, 60, handle ->
                    assertThat(MySqlTestSupport.server(kind()).killConnections(user)).isPositive()))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue());

            assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.table()
                    + " WHERE leader_id <> " + MySqlStore.UNMARKED)).as("the mark rolled back").isZero();
            List<OutboxRecord> all = store.mark(doomed, 1_000).records();
            assertThat(all).as("the same leader id marks them all after the failure").hasSize(100);
        }
    }

    @Test
    void connectionsKilledAtRandomDuringMarksAndPurgesLoseNothing() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        String user = "killed_random_" + suffix();
        try (HikariDataSource pool = MySqlTestSupport.pool(kind(), url, user, 3)) {
            MySqlStore store = newStore(pool);
            int total = 4_000;
            write(store, total);
            List<Long> written = new ArrayList<>();
            try (Connection c = admin.getConnection(); Statement s = c.createStatement();
                 var rs = s.executeQuery("SELECT id FROM " + store.table() + " ORDER BY id")) {
                while (rs.next()) {
                    written.add(rs.getLong(1));
                }
            }
            assertThat(written).hasSize(total);
            Set<Long> purged = new HashSet<>();
            Set<Long> maybePurged = ConcurrentHashMap.newKeySet();
            AtomicBoolean killing = new AtomicBoolean(true);
            AtomicInteger kills = new AtomicInteger();
            Future<?> killer = threads.submit(() -> {
                Random pace = new Random(seed + 1);
                while (killing.get()) {
                    kills.addAndGet(MySqlTestSupport.server(kind()).killConnections(user));
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5 + pace.nextInt(40))); // pacing, not waiting
                }
                return null;
            });
            int failures = 0;
            int calls = 0;
            try {
                for (int round = 0; round < 150; round++) {
                    calls++;
                    try {
                        List<OutboxRecord> marked = store.mark(UUID.randomUUID(), 1 + random.nextInt(400)).records();
                        List<Long> ids = new ArrayList<>();
                        for (OutboxRecord r : marked) {
                            if (!purged.contains(r.id()) && random.nextInt(20) == 0) {
                                ids.add(r.id());
                            }
                        }
                        if (!ids.isEmpty()) {
                            calls++;
                            try {
                                store.purge(ids);
                                purged.addAll(ids);
                            } catch (StoreException e) {
                                assertThat(e.isRetriable()).as("seed %d: %s", seed, e).isTrue();
                                maybePurged.addAll(ids);
                                failures++;
                            }
                        }
                    } catch (StoreException e) {
                        assertThat(e.isRetriable()).as("seed %d: %s", seed, e).isTrue();
                        failures++;
                    }
                }
            } finally {
                killing.set(false);
                killer.get(30, TimeUnit.SECONDS);
            }
            log.info("{}: {} store calls, {} failed on {} killed connections (seed {})", kind(), calls, failures,
                    kills.get(), seed);
            pool.getHikariPoolMXBean().softEvictConnections(); // idle ones may have been killed after their last use

            List<Long> left = new ArrayList<>();
            UUID survivor = UUID.randomUUID();
            while (true) {
                MarkResult result = store.mark(survivor, 1_000);
                if (result.isEmpty()) {
                    break;
                }
                result.records().forEach(r -> left.add(r.id()));
            }
            Set<Long> leftSet = new HashSet<>(left);
            assertThat(left).as("seed %d: no duplicates", seed).doesNotHaveDuplicates();
            assertThat(leftSet).as("seed %d: purged rows are gone", seed).doesNotContainAnyElementsOf(purged);
            int unaccounted = 0;
            for (long id : written) {
                if (!purged.contains(id) && !maybePurged.contains(id) && !leftSet.contains(id)) {
                    unaccounted++;
                }
            }
            assertThat(unaccounted).as("seed %d: rows lost", seed).isZero();
            assertThat(left.size() + purged.size()).as("seed %d", seed)
                    .isBetween(total - maybePurged.size(), total);
            assertThat(Arrays.asList(left.toArray(new Long[0]))).isSorted();
        }
    }
}
