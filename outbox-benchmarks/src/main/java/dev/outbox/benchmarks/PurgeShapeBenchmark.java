package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Where a MySQL purge's time goes: the same backlog deleted in batches by several statement shapes and driver
 * settings, each measured in wall time, the server's CPU time ({@code mysqld}'s or {@code mariadbd}'s, from
 * {@code /proc}) and this thread's CPU time, per row. No broker and no other load, so that the figures are the cost
 * of the statement, not of the machine. Not thread-safe.
 *
 * <p>Shapes: {@code store} ({@link MySqlStore#purge}, as the Dispatcher calls it), {@code in} (the store's
 * {@code DELETE ... WHERE id IN (?, ...)} of at most 1,000 ids, in plain JDBC), {@code in-server} (the same with
 * Connector/J's server-side prepared statements, {@code useServerPrepStmts} and {@code cachePrepStmts}),
 * {@code json} ({@code DELETE ... WHERE id IN (SELECT id FROM JSON_TABLE(?, ...))}, one parameter),
 * {@code json-join} (the multi-table form joining the {@code JSON_TABLE}), {@code batch} (one
 * {@code DELETE ... WHERE id = ?} per row, {@code rewriteBatchedStatements}: one round trip of many statements),
 * {@code ranges} ({@code id BETWEEN ? AND ?} for runs of consecutive ids; for reference only: a range scan locks the
 * record after its end, see {@code MySqlStore.deleteSql}). Patterns: {@code contiguous} (each batch a run of
 * consecutive ids, as a sequential loop purges) or {@code scattered} (ids shuffled within windows of 10,000, as a
 * pipelined drain acknowledges them across keys and partitions; each batch sorted).
 *
 * <pre>
 * BENCH_MAIN=PurgeShapeBenchmark ./bench.sh [rows, default 200000] [mysql|mariadb] [shapes, default all]
 *     [batch, default 2000] [pattern: contiguous|scattered, default scattered] [rounds, default 2]
 * </pre>
 */
public final class PurgeShapeBenchmark {
    private static final int ROWS_PER_INSERT = 10_000;
    private static final int WINDOW = 10_000;
    private static final List<String> SHAPES = List.of("store", "in", "in-server", "json", "json-join", "batch",
            "ranges", "read", "mark");

    private PurgeShapeBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        boolean mariadb = args.length > 1 && args[1].equals("mariadb");
        List<String> shapes = args.length > 2 && !args[2].equals("all") ? List.of(args[2].split(",")) : SHAPES;
        int batch = args.length > 3 ? Integer.parseInt(args[3]) : 2_000;
        String pattern = args.length > 4 ? args[4] : "scattered";
        int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 2;
        for (String shape : shapes) {
            if (!SHAPES.contains(shape)) {
                throw new IllegalArgumentException("unknown shape " + shape + "; one of " + SHAPES);
            }
        }
        JdbcServer server = mariadb ? TestServers.mariadb() : TestServers.mysql();
        String url = server.createDatabase("outbox_purge_shapes");
        String sep = url.contains("?") ? "&" : "?";
        try (HikariDataSource plain = BenchEnvironment.pool(url, server.username(), server.password(), 2);
             HikariDataSource serverPrep = BenchEnvironment.pool(url + sep
                     + "useServerPrepStmts=true&cachePrepStmts=true&prepStmtCacheSize=500&prepStmtCacheSqlLimit=65536",
                     server.username(), server.password(), 1);
             HikariDataSource rewrite = BenchEnvironment.pool(url + sep + "rewriteBatchedStatements=true",
                     server.username(), server.password(), 1)) {
            MySqlStore store = MySqlStore.builder(plain).build();
            store.createSchema();
            Jdbc.execute(plain, "SET GLOBAL innodb_flush_log_at_trx_commit = 1");
            ServerClock clock = ServerClock.of(plain);
            System.out.printf(Locale.ROOT, "%s, %,d rows of 100 bytes, batches of %,d, %s ids, one connection,"
                    + " innodb_flush_log_at_trx_commit=1%n", Jdbc.queryString(plain, "SELECT VERSION()"), rows,
                    batch, pattern);
            System.out.printf(Locale.ROOT, "%-10s %5s %10s %12s %12s %12s %12s %12s%n", "shape", "round", "rows/s",
                    "wall us/row", "server us/r", "thread us/r", "JVM us/r", "ms/batch");
            for (int round = 1; round <= rounds; round++) {
                for (String shape : shapes) {
                    List<Long> ids = fill(plain, store, rows);
                    List<List<Long>> batches = batches(ids, batch, pattern, round);
                    HikariDataSource pool = shape.equals("in-server") ? serverPrep
                            : shape.equals("batch") ? rewrite : plain;
                    run(shape, round, batches, rows, store, pool, clock);
                    long left = Jdbc.queryLong(plain, "SELECT COUNT(*) FROM " + store.table());
                    if (left != 0) {
                        throw new IllegalStateException(shape + " left " + left + " rows");
                    }
                }
            }
        }
    }

    private static void run(String shape, int round, List<List<Long>> batches, int rows, MySqlStore store,
                            HikariDataSource pool, ServerClock clock) throws SQLException {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        String t = store.table();
        double server0 = clock.seconds();
        long cpu0 = threads.getCurrentThreadCpuTime();
        long process0 = os.getProcessCpuTime();
        long start = System.nanoTime();
        long untimed = 0;
        if (shape.equals("read") || shape.equals("mark")) {
            int size = batches.get(0).size();
            long cursor = 0;
            java.util.UUID leader = java.util.UUID.randomUUID();
            while (true) {
                List<dev.outbox.OutboxRecord> records = shape.equals("read")
                        ? store.read(cursor, List.of(), size).rows().records() : store.mark(leader, size).records();
                if (records.isEmpty()) {
                    break;
                }
                cursor = records.get(records.size() - 1).id();
            }
            long u = System.nanoTime();
            Jdbc.execute(pool, "DELETE FROM " + t);
            untimed = System.nanoTime() - u;
        } else if (shape.equals("store")) {
            for (List<Long> b : batches) {
                store.purge(b);
            }
        } else {
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                for (List<Long> b : batches) {
                    try (Statement s = c.createStatement()) {
                        s.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
                    }
                    delete(shape, c, t, b);
                    c.commit();
                }
                c.setAutoCommit(true);
            }
        }
        double seconds = (System.nanoTime() - start - untimed) / 1e9;
        double client = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
        double process = (os.getProcessCpuTime() - process0) / 1e9;
        double server = clock.seconds() - server0;
        System.out.printf(Locale.ROOT, "%-10s %5d %,10.0f %12.1f %12.1f %12.1f %12.1f %12.1f%n", shape, round,
                rows / seconds, seconds * 1e6 / rows, server * 1e6 / rows, client * 1e6 / rows,
                process * 1e6 / rows, seconds * 1e3 / batches.size());
    }

    private static void delete(String shape, Connection c, String t, List<Long> ids) throws SQLException {
        String name = t.replace("`", "");
        switch (shape) {
            case "in", "in-server" -> {
                for (int from = 0; from < ids.size(); from += 1_000) {
                    List<Long> chunk = ids.subList(from, Math.min(ids.size(), from + 1_000));
                    try (PreparedStatement s = c.prepareStatement("DELETE /*+ INDEX(`" + name + "` PRIMARY) */ FROM "
                            + t + " WHERE id IN (" + placeholders(chunk.size()) + ")")) {
                        for (int i = 0; i < chunk.size(); i++) {
                            s.setLong(i + 1, chunk.get(i));
                        }
                        s.executeUpdate();
                    }
                }
            }
            case "json" -> {
                try (PreparedStatement s = c.prepareStatement("DELETE /*+ INDEX(`" + name + "` PRIMARY) */ FROM " + t
                        + " WHERE id IN (SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) j)")) {
                    s.setString(1, ids.toString());
                    s.executeUpdate();
                }
            }
            case "json-join" -> {
                try (PreparedStatement s = c.prepareStatement("DELETE /*+ JOIN_ORDER(j, " + name + ") */ " + t
                        + " FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) j JOIN " + t
                        + " FORCE INDEX (PRIMARY) ON " + t + ".id = j.id")) {
                    s.setString(1, ids.toString());
                    s.executeUpdate();
                }
            }
            case "batch" -> {
                try (PreparedStatement s = c.prepareStatement("DELETE FROM " + t + " WHERE id = ?")) {
                    for (Long id : ids) {
                        s.setLong(1, id);
                        s.addBatch();
                    }
                    s.executeBatch();
                }
            }
            case "ranges" -> {
                List<long[]> runs = new ArrayList<>();
                for (Long id : ids) {
                    long[] last = runs.isEmpty() ? null : runs.get(runs.size() - 1);
                    if (last != null && last[1] + 1 == id) {
                        last[1] = id;
                    } else {
                        runs.add(new long[] {id, id});
                    }
                }
                for (int from = 0; from < runs.size(); from += 500) {
                    List<long[]> chunk = runs.subList(from, Math.min(runs.size(), from + 500));
                    StringBuilder where = new StringBuilder();
                    for (int i = 0; i < chunk.size(); i++) {
                        where.append(i == 0 ? "" : " OR ").append("id BETWEEN ? AND ?");
                    }
                    try (PreparedStatement s = c.prepareStatement("DELETE /*+ INDEX(`" + name + "` PRIMARY) */ FROM "
                            + t + " WHERE " + where)) {
                        int p = 1;
                        for (long[] r : chunk) {
                            s.setLong(p++, r[0]);
                            s.setLong(p++, r[1]);
                        }
                        s.executeUpdate();
                    }
                }
            }
            default -> throw new IllegalArgumentException(shape);
        }
    }

    /** The ids in batches: consecutive runs, or shuffled within windows of {@value #WINDOW} and each batch sorted. */
    private static List<List<Long>> batches(List<Long> ids, int batch, String pattern, long seed) {
        List<Long> order = new ArrayList<>(ids);
        if (pattern.equals("scattered")) {
            SplittableRandom random = new SplittableRandom(seed);
            for (int from = 0; from < order.size(); from += WINDOW) {
                List<Long> window = order.subList(from, Math.min(order.size(), from + WINDOW));
                for (int i = window.size() - 1; i > 0; i--) {
                    Collections.swap(window, i, random.nextInt(i + 1));
                }
            }
        } else if (!pattern.equals("contiguous")) {
            throw new IllegalArgumentException("a pattern is contiguous or scattered: " + pattern);
        }
        List<List<Long>> out = new ArrayList<>();
        for (int from = 0; from < order.size(); from += batch) {
            List<Long> b = new ArrayList<>(order.subList(from, Math.min(order.size(), from + batch)));
            Collections.sort(b);
            out.add(b);
        }
        return out;
    }

    private static List<Long> fill(HikariDataSource pool, MySqlStore store, int rows) throws SQLException {
        String digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
                + " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";
        for (int done = 0; done < rows; done += ROWS_PER_INSERT) {
            Jdbc.execute(pool, "INSERT INTO " + store.table() + " (topic, `key`, value)"
                    + " SELECT 'bench', CONCAT('key-', FLOOR(RAND() * 10000)), RANDOM_BYTES(100) FROM " + digits
                    + " a, " + digits + " b, " + digits + " c, " + digits + " d LIMIT "
                    + Math.min(ROWS_PER_INSERT, rows - done));
        }
        List<Long> ids = new ArrayList<>(rows);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             var rs = s.executeQuery("SELECT id FROM " + store.table() + " ORDER BY id")) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        return ids;
    }

    private static String placeholders(int count) {
        StringBuilder out = new StringBuilder(count * 3);
        for (int i = 0; i < count; i++) {
            out.append(i == 0 ? "?" : ", ?");
        }
        return out.toString();
    }

    /** CPU seconds of the local server process ({@code @@pid_file}); NaN if it is not a local Linux process. */
    private record ServerClock(Path stat) {
        static ServerClock of(HikariDataSource pool) {
            try {
                String pid = Files.readString(Path.of(Jdbc.queryString(pool, "SELECT @@pid_file")),
                        StandardCharsets.US_ASCII).trim();
                return new ServerClock(Path.of("/proc", pid, "stat"));
            } catch (Exception e) {
                return new ServerClock(null);
            }
        }

        double seconds() {
            if (stat == null) {
                return Double.NaN;
            }
            try {
                String s = Files.readString(stat, StandardCharsets.US_ASCII);
                String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
                return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
            } catch (Exception e) {
                return Double.NaN;
            }
        }
    }
}
