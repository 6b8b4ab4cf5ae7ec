package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.store.postgres.PostgresPublisher;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The writer's cost of the two harvests on Postgres: the same transaction — {@code n} messages of 100 bytes
 * published with one {@code publish} call, then {@code COMMIT} — written as rows by the table publisher
 * ({@code INSERT}, a JDBC batch for n &gt; 1) or emitted by the WAL publisher (one
 * {@code pg_logical_emit_message(true, ...)} statement per call), side by side in one run: one writer on one
 * connection, back to back, for n = 1 and 10, with {@code synchronous_commit} off (the embedded server's setting:
 * a commit does not wait for its WAL flush, so this is the CPU and round-trip cost) and on (each commit waits for
 * its WAL flush, as on a production server). Each cell reports commits per second (wall clock) and CPU time per
 * commit of the Postgres server's processes and of the writer's thread; on a busy machine the CPU times are the
 * steadier figures. The two publishers alternate cell by cell, their order swapped every round; the outbox table is
 * truncated and vacuumed before each table cell (its vacuum of dead rows after delivery is not counted). No
 * replication slot exists: decoding is the walsender's cost, not the writer's.
 *
 * <pre>
 * ./bench.sh writer-cost [seconds per cell, default 5] [rounds, default 2]
 * </pre>
 *
 * <p>Not thread-safe; a main only.
 */
public final class WriterCostBenchmark {
    private static final int[] MESSAGES_PER_TRANSACTION = {1, 10};

    private WriterCostBenchmark() {
    }

    /** What one cell measured: commits per second, and CPU microseconds per commit. */
    private record Cost(double commitsPerSecond, double serverMicros, double jvmMicros) {
    }

    /** Runs the measurement; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        // bench.sh passes the arguments after the scenario's name
        run("./bench.sh writer-cost " + String.join(" ", args), seconds, rounds, System.out);
        System.exit(0); // the embedded server's threads would keep the JVM alive
    }

    /**
     * Runs {@code rounds} rounds (after a warm-up round of at most 1 s per cell) of {@code seconds} per cell,
     * printing the table to {@code out} line by line, headed by {@code command}.
     */
    static void run(String command, double seconds, int rounds, PrintStream out) throws Exception {
        JdbcServer server = TestServers.postgres();
        String url = server.createDatabase("outbox_writer_cost");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 2)) {
            PostgresStore store = PostgresStore.builder(pool).build();
            store.createSchema();
            Publisher table = store.publisher();
            Publisher wal = walPublisher(store);
            ServerCpu serverCpu = ServerCpu.ofPostgres(pool);
            out.println("command: " + command);
            out.println(Machine.describe() + ", load average " + Machine.loadAverage());
            out.printf("%s %s, wal_level=%s; one writer, %s s per cell, %d round(s); messages of 100 bytes%n",
                    server.kind(), server.version(), Jdbc.queryString(pool, "SHOW wal_level"), seconds, rounds);
            out.printf("%-5s %-4s %-3s | %-32s | %-32s | %s%n", "", "", "", "table INSERT", "WAL emit",
                    "WAL / table");
            out.printf("%-5s %-4s %-3s | %10s %10s %10s | %10s %10s %10s | %8s %8s%n", "round", "sync", "n",
                    "commits/s", "server µs", "JVM µs", "commits/s", "server µs", "JVM µs", "commits", "server");
            for (int round = 0; round <= rounds; round++) {
                for (String sync : List.of("off", "on")) {
                    for (int n : MESSAGES_PER_TRANSACTION) {
                        List<OutboxMessage> batch = batch(n);
                        double cell = round == 0 ? Math.min(1, seconds) : seconds;
                        Cost tableCost = null;
                        Cost walCost = null;
                        for (boolean walCell : round % 2 == 0 ? List.of(false, true) : List.of(true, false)) {
                            if (walCell) {
                                walCost = measure(pool, serverCpu, wal, batch, sync, cell);
                            } else {
                                BenchEnvironment.execute(pool, "TRUNCATE " + store.table());
                                BenchEnvironment.execute(pool, "VACUUM ANALYZE " + store.table());
                                tableCost = measure(pool, serverCpu, table, batch, sync, cell);
                            }
                        }
                        out.printf("%-5s %-4s %-3d | %,10.0f %10.1f %10.1f | %,10.0f %10.1f %10.1f"
                                        + " | %8.2f %8.2f%n", round == 0 ? "warm" : round, sync, n,
                                tableCost.commitsPerSecond(), tableCost.serverMicros(), tableCost.jvmMicros(),
                                walCost.commitsPerSecond(), walCost.serverMicros(), walCost.jvmMicros(),
                                walCost.commitsPerSecond() / tableCost.commitsPerSecond(),
                                walCost.serverMicros() / tableCost.serverMicros());
                    }
                }
            }
            out.println("server µs / JVM µs: CPU time per commit of all the Postgres server's processes and of"
                    + " the writer's thread; commits/s: wall clock, the figure most disturbed by other load");
        }
    }

    private static List<OutboxMessage> batch(int n) {
        List<OutboxMessage> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(OutboxMessage.builder("orders", "key-" + i).value(new byte[100]).build());
        }
        return List.copyOf(batch);
    }

    /** Transactions publishing {@code batch}, back to back for {@code seconds}, on one connection. */
    private static Cost measure(HikariDataSource pool, ServerCpu serverCpu, Publisher publisher,
                                List<OutboxMessage> batch, String sync, double seconds) throws SQLException {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (Connection connection = pool.getConnection()) {
            try (Statement statement = connection.createStatement()) {
                statement.execute("SET synchronous_commit = " + sync);
            }
            connection.setAutoCommit(false);
            double serverStarted = serverCpu.seconds();
            long jvmStarted = threads.getCurrentThreadCpuTime();
            long started = System.nanoTime();
            long deadline = started + (long) (seconds * 1e9);
            long commits = 0;
            long now;
            do {
                if (batch.size() == 1) {
                    publisher.publish(connection, batch.get(0));
                } else {
                    publisher.publish(connection, batch);
                }
                connection.commit();
                commits++;
                now = System.nanoTime();
            } while (now < deadline);
            long jvmNanos = threads.getCurrentThreadCpuTime() - jvmStarted;
            double serverSeconds = serverCpu.seconds() - serverStarted;
            connection.setAutoCommit(true);
            try (Statement statement = connection.createStatement()) {
                statement.execute("RESET synchronous_commit");
            }
            return new Cost(commits / ((now - started) / 1e9), serverSeconds * 1e6 / commits,
                    jvmNanos / 1e3 / commits);
        }
    }

    /**
     * The store's publisher in WAL mode. Its constructor is package-private until the store's builder can choose
     * the WAL harvest; this calls it with the store's own settings (names, maxKeyLength, query timeout,
     * decorators) and the prefix {@code WalSql.prefix} gives those names.
     */
    private static Publisher walPublisher(PostgresStore store) throws ReflectiveOperationException {
        PostgresPublisher tablePublisher = store.publisher();
        Class<?> namesType = Class.forName("dev.outbox.spi.SqlTableNames");
        Class<?> decoratorsType = Class.forName("dev.outbox.spi.MessageDecorators");
        Object names = field(tablePublisher, PostgresPublisher.class, "names");
        Method prefix = Class.forName("dev.outbox.store.postgres.WalSql").getDeclaredMethod("prefix", namesType);
        prefix.setAccessible(true);
        Constructor<PostgresPublisher> constructor = PostgresPublisher.class.getDeclaredConstructor(namesType,
                int.class, int.class, decoratorsType, String.class);
        constructor.setAccessible(true);
        return constructor.newInstance(names, store.maxKeyLength(),
                field(tablePublisher, PostgresPublisher.class, "queryTimeoutSeconds"),
                field(tablePublisher, dev.outbox.store.sql.SqlPublisher.class, "decorators"),
                prefix.invoke(null, names));
    }

    private static Object field(Object target, Class<?> owner, String name) throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(target);
    }
}
