package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.internal.HarvestCursor;
import dev.outbox.spi.ReadResult;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
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
 * Late commits under the cursor harvest's read: writers commit out of id order (a transaction that took its ids
 * first stays open while a later one commits) and roll some back, all within the late-commit window, while a reader
 * keeps a cursor and its gaps in the engine's {@link HarvestCursor}, reads with {@link MySqlStore#read} and purges
 * what it read. Every committed row is read exactly once, per key in the order written; no rolled-back or
 * uncommitted row is ever read; and the gaps of rolled-back ids close once the window has passed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class MySqlLateCommitReadTests {
    /** Longer than any writer transaction of the test (milliseconds), short enough to see gaps close. */
    private static final Duration WINDOW = Duration.ofSeconds(5);
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        pool = MySqlTestSupport.pool(kind(), MySqlTestSupport.database(kind(), "outbox_late_" + suffix),
                "late_commit", 12);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    private Connection begin() throws SQLException {
        Connection c = pool.getConnection();
        c.setAutoCommit(false);
        return c;
    }

    @Test
    void lateCommitsAreReadOnceNeverReorderAKeyAndNeverExposeUncommittedRows() throws Exception {
        long seed = System.nanoTime();
        MySqlStore store = MySqlStore.builder(pool).table("late").lateCommitWindow(WINDOW).build();
        store.createSchema();
        int writers = 4;
        int roundsPerWriter = 40;
        Map<String, List<String>> committedByKey = new ConcurrentHashMap<>();
        Set<String> committing = ConcurrentHashMap.newKeySet();
        Set<String> rolledBack = ConcurrentHashMap.newKeySet();
        Map<String, List<String>> readByKey = new HashMap<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicInteger reads = new AtomicInteger();
        AtomicLong late = new AtomicLong();
        AtomicLong closed = new AtomicLong();
        HarvestCursor cursor = new HarvestCursor(16);
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
                        String later = "w" + writer + "-b" + random.nextInt(3);
                        try (Connection t0 = begin()) {
                            List<String> t0Values = write(store, t0, early, sequence, 1 + random.nextInt(3));
                            try (Connection t1 = begin()) {
                                List<String> t1Values = write(store, t1, later, sequence, 1 + random.nextInt(3));
                                finish(t1, t1Values, later, random.nextInt(8) != 0, committing, committedByKey,
                                        rolledBack, sequence);
                            }
                            if (random.nextBoolean()) {
                                // t0 stays open until the reader has read past its ids, well within the window
                                int seen = reads.get();
                                Await.until(() -> reads.get() >= seen + 2, WINDOW.dividedBy(3));
                            }
                            finish(t0, t0Values, early, random.nextInt(8) != 0, committing, committedByKey,
                                    rolledBack, sequence);
                        }
                    }
                    return null;
                }));
            }
            Future<?> reader = threads.submit(() -> {
                Random random = new Random(seed - 1);
                boolean last = false;
                while (!last) {
                    last = !writing.get();
                    HarvestCursor.Request request = cursor.request(1 + random.nextInt(40));
                    ReadResult result = store.read(request.after(), request.recheck(), request.limit());
                    reads.incrementAndGet();
                    HarvestCursor.Advance advance = cursor.advance(request, result);
                    late.addAndGet(advance.late());
                    closed.addAndGet(advance.closed());
                    if (!advance.unexpected().isEmpty()) {
                        violations.add("read ids below the cursor outside its gaps: " + advance.unexpected());
                    }
                    if (!result.rows().rejected().isEmpty()) {
                        violations.add("rejected rows: " + result.rows().rejected());
                    }
                    List<OutboxRecord> records = result.rows().records();
                    for (OutboxRecord r : records) {
                        String value = new String(r.message().value(), StandardCharsets.UTF_8);
                        if (!committing.contains(value)) {
                            violations.add("read " + value + " (id " + r.id() + ") before its commit began");
                        }
                        readByKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(value);
                    }
                    store.purge(records.stream().map(OutboxRecord::id).toList());
                    if (last && (!records.isEmpty() || !cursor.gaps().isEmpty())) {
                        last = false; // drain what the writers left, and wait out the window of the last gaps
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
            reader.get(WINDOW.toSeconds() + 30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("seed " + seed + ": a thread failed: " + e.getCause(), e.getCause());
        } finally {
            threads.shutdownNow();
        }

        String summary = String.format(Locale.ROOT, "%s: %d committed, %d rolled back, %d reads, %d rows read from"
                        + " gaps, %d gap ids closed (seed %d)", kind(),
                committedByKey.values().stream().mapToInt(List::size).sum(), rolledBack.size(), reads.get(),
                late.get(), closed.get(), seed);
        System.out.println(summary);
        try {
            assertThat(violations).isEmpty();
            for (List<String> values : readByKey.values()) {
                assertThat(values).as("rolled back values").doesNotContainAnyElementsOf(rolledBack);
            }
            assertThat(readByKey).as("per key, every committed row once, in the order written")
                    .containsExactlyInAnyOrderEntriesOf(committedByKey);
            assertThat(store.backlog()).isZero();
            assertThat(late.get()).as("rows committed after the reader passed their ids").isPositive();
            assertThat(closed.get()).as("the rolled-back ids' gaps closed after the window").isPositive();
        } catch (AssertionError e) {
            throw new AssertionError(summary + ": " + e.getMessage(), e);
        }
    }

    private static List<String> write(MySqlStore store, Connection c, String key, Map<String, Integer> sequence,
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
}
