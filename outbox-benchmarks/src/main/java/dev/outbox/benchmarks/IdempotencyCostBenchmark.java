package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlIdempotency;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;

/**
 * A one-off measurement on Postgres of what an idempotency key ({@code idempotencyKeys(retention)}, #39) costs a
 * writer: {@code transactions} single-message transactions (100-byte value, publish then commit, one connection,
 * sequential) in three cells, alternating their order round after round:
 * <ol>
 *   <li>{@code plain}: a store without the option, messages without a key;</li>
 *   <li>{@code on, no key}: a store with the option on, messages without a key (no claim is run);</li>
 *   <li>{@code on, key}: the same store, every message with a new key (one claim statement before the INSERT).</li>
 * </ol>
 * The tables are truncated before each cell; the median of each cell over the rounds is printed last. Run with
 * {@code BENCH_MAIN=IdempotencyCostBenchmark ./bench.sh [transactions] [rounds]}. A main only.
 */
public final class IdempotencyCostBenchmark {
    private IdempotencyCostBenchmark() {
    }

    /**
     * Runs the measurement.
     *
     * @param args transactions per cell (default 10,000), rounds (default 3)
     * @throws Exception if anything fails
     */
    public static void main(String[] args) throws Exception {
        int transactions = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        JdbcServer server = TestServers.postgres();
        String url = server.createDatabase("bench_idempotency");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 2)) {
            PostgresStore plain = PostgresStore.builder(pool).table("idem_plain").build();
            PostgresStore keyed = PostgresStore.builder(pool).table("idem_keyed")
                    .idempotencyKeys(Duration.ofHours(24)).build();
            plain.createSchema();
            keyed.createSchema();
            String keys = "idem_keyed" + SqlIdempotency.TABLE_SUFFIX;
            byte[] value = new byte[100];
            System.out.printf("%,d single-message transactions per cell, %d round(s)%n", transactions, rounds);
            List<String> cells = List.of("plain", "on, no key", "on, key");
            java.util.Map<String, List<Double>> micros = new java.util.LinkedHashMap<>();
            for (int round = 1; round <= rounds; round++) {
                for (int c = 0; c < cells.size(); c++) {
                    String cell = cells.get((c + round - 1) % cells.size());
                    PostgresStore store = cell.equals("plain") ? plain : keyed;
                    BenchEnvironment.execute(pool, "TRUNCATE " + store.table());
                    if (store == keyed) {
                        BenchEnvironment.execute(pool, "TRUNCATE " + keys);
                    }
                    BenchEnvironment.execute(pool, "VACUUM ANALYZE " + store.table());
                    boolean withKey = cell.equals("on, key");
                    long started = System.nanoTime();
                    try (Connection connection = pool.getConnection()) {
                        connection.setAutoCommit(false);
                        for (int i = 0; i < transactions; i++) {
                            OutboxMessage.Builder m = OutboxMessage.builder("orders", "key-" + i % 100).value(value);
                            if (withKey) {
                                m.idempotencyKey("r" + round + "-" + i);
                            }
                            store.publisher().publish(connection, List.of(m.build()));
                            connection.commit();
                        }
                    }
                    double seconds = (System.nanoTime() - started) / 1e9;
                    micros.computeIfAbsent(cell, k -> new java.util.ArrayList<>()).add(seconds * 1e6 / transactions);
                    System.out.printf("round %d  %-11s %7.2f s  %8.1f µs/transaction  %,8.0f transactions/s%n",
                            round, cell, seconds, seconds * 1e6 / transactions, transactions / seconds);
                }
            }
            for (String cell : cells) {
                List<Double> sorted = micros.get(cell).stream().sorted().toList();
                System.out.printf("median %-11s %8.1f µs/transaction (min %.1f, max %.1f)%n", cell,
                        sorted.get(sorted.size() / 2), sorted.get(0), sorted.get(sorted.size() - 1));
            }
        }
        System.exit(0); // the embedded server's threads
    }
}
