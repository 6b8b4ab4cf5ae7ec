package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
    record Cost(double commitsPerSecond, double serverMicros, double jvmMicros) {
    }

    /**
     * One line of the table: a round ({@code warm} or its number), a synchronous_commit, n, the three publishers
     * (the table's without and with commit notifications, the WAL's).
     */
    record Cell(String round, String sync, int messages, Cost table, Cost notifying, Cost wal) {
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
     *
     * @return the measured cells, the warm-up round's included
     */
    static List<Cell> run(String command, double seconds, int rounds, PrintStream out) throws Exception {
        List<Cell> cells = new ArrayList<>();
        JdbcServer server = TestServers.postgres();
        String url = server.createDatabase("outbox_writer_cost");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 2)) {
            PostgresStore store = PostgresStore.builder(pool).commitNotifications(false).build();
            store.createSchema();
            Publisher table = store.publisher();
            Publisher notifying = PostgresStore.builder(pool).build().publisher(); // pg_notify in the INSERT
            PostgresStore walStore = PostgresStore.builder(pool).walHarvest(WalHarvest.builder(url)
                    .user(server.username()).password(server.password()).build()).build();
            walStore.createSchema(); // the emit functions, and a slot and publication ...
            walStore.dropSlot();     // ... dropped: with no reader, a slot only holds WAL back
            Publisher wal = walStore.publisher();
            ServerCpu serverCpu = ServerCpu.ofPostgres(pool);
            out.println("command: " + command);
            out.println(Machine.describe() + ", load average " + Machine.loadAverage());
            out.printf("%s %s, wal_level=%s; one writer, %s s per cell, %d round(s); messages of 100 bytes%n",
                    server.kind(), server.version(), Jdbc.queryString(pool, "SHOW wal_level"), seconds, rounds);
            out.printf("%-5s %-4s %-3s | %-32s | %-32s | %-32s | %-17s | %s%n", "", "", "", "table INSERT",
                    "table INSERT + pg_notify", "WAL emit", "notify / INSERT", "WAL / INSERT");
            out.printf("%-5s %-4s %-3s | %10s %10s %10s | %10s %10s %10s | %10s %10s %10s | %8s %8s | %8s %8s%n",
                    "round", "sync", "n", "commits/s", "server µs", "JVM µs", "commits/s", "server µs", "JVM µs",
                    "commits/s", "server µs", "JVM µs", "commits", "server", "commits", "server");
            for (int round = 0; round <= rounds; round++) {
                for (String sync : List.of("off", "on")) {
                    for (int n : MESSAGES_PER_TRANSACTION) {
                        List<OutboxMessage> batch = batch(n);
                        double cell = round == 0 ? Math.min(1, seconds) : seconds;
                        Cost[] costs = new Cost[3]; // table, notifying table, WAL
                        // The order rotates round by round, so that no publisher always runs first.
                        for (int k = 0; k < 3; k++) {
                            int which = (k + round) % 3;
                            if (which == 2) {
                                costs[2] = measure(pool, serverCpu, wal, batch, sync, cell);
                            } else {
                                BenchEnvironment.execute(pool, "TRUNCATE " + store.table());
                                BenchEnvironment.execute(pool, "VACUUM ANALYZE " + store.table());
                                costs[which] = measure(pool, serverCpu, which == 0 ? table : notifying, batch, sync,
                                        cell);
                            }
                        }
                        Cost tableCost = costs[0];
                        Cost notifyCost = costs[1];
                        Cost walCost = costs[2];
                        cells.add(new Cell(round == 0 ? "warm" : String.valueOf(round), sync, n, tableCost,
                                notifyCost, walCost));
                        out.printf("%-5s %-4s %-3d | %,10.0f %10.1f %10.1f | %,10.0f %10.1f %10.1f"
                                        + " | %,10.0f %10.1f %10.1f | %8.2f %8.2f | %8.2f %8.2f%n",
                                round == 0 ? "warm" : round, sync, n,
                                tableCost.commitsPerSecond(), tableCost.serverMicros(), tableCost.jvmMicros(),
                                notifyCost.commitsPerSecond(), notifyCost.serverMicros(), notifyCost.jvmMicros(),
                                walCost.commitsPerSecond(), walCost.serverMicros(), walCost.jvmMicros(),
                                notifyCost.commitsPerSecond() / tableCost.commitsPerSecond(),
                                notifyCost.serverMicros() / tableCost.serverMicros(),
                                walCost.commitsPerSecond() / tableCost.commitsPerSecond(),
                                walCost.serverMicros() / tableCost.serverMicros());
                    }
                }
            }
            out.println("server µs / JVM µs: CPU time per commit of all the Postgres server's processes and of"
                    + " the writer's thread; commits/s: wall clock, the figure most disturbed by other load");
        }
        return cells;
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
}
