package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxRecord;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The MySQL store's two harvest loops, bare: {@code mark} then {@code purge}, against {@code read} (above a cursor
 * kept here) then {@code purge}, each sequential on one pooled connection (no pipelining, no broker), with the
 * store's own calls. Each loop drains a backlog of fresh rows of 100 random bytes (written by {@code INSERT ...
 * SELECT} of 10,000 rows a statement), in batches of 1,000; the loops run in the order given, so that each can run
 * twice, alternately. Not thread-safe.
 *
 * <pre>
 * BENCH_MAIN=StoreLoopBenchmark ./bench.sh [rows, default 300000] [mysql|mariadb] [loops, default mark,read,mark,read]
 * </pre>
 */
public final class StoreLoopBenchmark {
    private static final int BATCH = 1_000;
    private static final int ROWS_PER_INSERT = 10_000;

    private StoreLoopBenchmark() {
    }

    public static void main(String[] args) {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 300_000;
        JdbcServer server = args.length > 1 && args[1].equals("mariadb") ? TestServers.mariadb() : TestServers.mysql();
        List<String> loops = List.of((args.length > 2 ? args[2] : "mark,read,mark,read").split(","));
        for (String loop : loops) {
            if (!loop.equals("mark") && !loop.equals("read")) {
                throw new IllegalArgumentException("a loop is mark or read: " + loop);
            }
        }
        String url = server.createDatabase("outbox_store_loops");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 1)) {
            MySqlStore store = MySqlStore.builder(pool).build();
            store.createSchema();
            System.out.printf(Locale.ROOT, "%s, %,d rows of 100 bytes, batches of %,d, one connection%n",
                    Jdbc.queryString(pool, "SELECT VERSION()"), rows, BATCH);
            for (String loop : loops) {
                fill(pool, store, rows);
                run(store, loop);
            }
        }
    }

    private static void run(MySqlStore store, String loop) {
        UUID leader = UUID.randomUUID();
        long cursor = 0;
        long done = 0;
        long takeNanos = 0;
        long purgeNanos = 0;
        long start = System.nanoTime();
        while (true) {
            long t0 = System.nanoTime();
            List<OutboxRecord> records = loop.equals("mark") ? store.mark(leader, BATCH).records()
                    : store.read(cursor, List.of(), BATCH).rows().records();
            long t1 = System.nanoTime();
            takeNanos += t1 - t0;
            if (records.isEmpty()) {
                break;
            }
            List<Long> ids = new ArrayList<>(records.size());
            for (OutboxRecord r : records) {
                ids.add(r.id());
            }
            cursor = ids.get(ids.size() - 1);
            store.purge(ids);
            purgeNanos += System.nanoTime() - t1;
            done += ids.size();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double batches = Math.max(1, done / (double) BATCH);
        System.out.printf(Locale.ROOT,
                "%s + purge: %,d rows in %.2f s = %,.0f rows/s (%s %.1f ms, purge %.1f ms a batch)%n", loop, done, seconds, done / seconds, loop, takeNanos / 1e6 / batches, purgeNanos / 1e6 / batches);
    }

    private static void fill(HikariDataSource pool, MySqlStore store, int rows) {
        String digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
                + " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";
        for (int done = 0; done < rows; done += ROWS_PER_INSERT) {
            Jdbc.execute(pool, "INSERT INTO " + store.table() + " (topic, `key`, value)"
                    + " SELECT 'bench', CONCAT('key-', FLOOR(RAND() * 10000)), RANDOM_BYTES(100) FROM " + digits
                    + " a, " + digits + " b, " + digits + " c, " + digits + " d LIMIT "
                    + Math.min(ROWS_PER_INSERT, rows - done));
        }
    }
}
