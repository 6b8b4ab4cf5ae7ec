package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Two one-off measurements on Postgres, sequential, one connection:
 * <ol>
 *   <li>the writer's cost of the schema's id (the default that takes the transaction id first and notes the id,
 *       {@code CASE WHEN pg_current_xact_id() IS NOT NULL THEN set_config('dev_outbox.id', nextval(...)) END}, and
 *       the id guard, a {@code BEFORE INSERT} trigger, #42) against bigserial's plain {@code nextval(...)} without a
 *       trigger: {@code rows} rows of 100 bytes published in transactions of 1,000 (one JDBC batch each),
 *       alternating the two tables round after round;</li>
 *   <li>the raw harvest loops on the same rows: {@code store.read(cursor, [], 1000)} then {@code store.purge(ids)},
 *       against {@code store.mark(leader, 1000)} then {@code store.purge(ids)} (no broker, no pipelining).</li>
 * </ol>
 * Run with {@code BENCH_MAIN=IdDefaultBenchmark ./bench.sh [rows] [rounds] [all|insert|harvest]}. Not thread-safe; a main only.
 */
public final class IdDefaultBenchmark {
    private static final int BATCH = 1_000;

    private IdDefaultBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 300_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        String what = args.length > 2 ? args[2] : "all"; // all, insert or harvest
        JdbcServer server = TestServers.postgres();
        String url = server.createDatabase("bench_id_default");
        try (HikariDataSource pool = BenchEnvironment.pool(url, server.username(), server.password(), 2)) {
            PostgresStore xidFirst = PostgresStore.builder(pool).table("xid_first").build();
            PostgresStore plain = PostgresStore.builder(pool).table("plain_nextval").build();
            xidFirst.createSchema();
            plain.createSchema();
            // bigserial's own default: nextval('<sequence>'::regclass), the sequence resolved once, here.
            BenchEnvironment.execute(pool, "DO $$ BEGIN EXECUTE format('ALTER TABLE %s ALTER COLUMN id SET DEFAULT"
                    + " nextval(%L::regclass)', '" + plain.table() + "', pg_get_serial_sequence('" + plain.table()
                    + "', 'id')); END $$");
            BenchEnvironment.execute(pool, "DROP TRIGGER outbox_id_guard ON " + plain.table()); // it needs the default
            System.out.println("plain default: " + dev.outbox.testservers.Jdbc.queryString(pool, "SELECT pg_get_expr(adbin,"
                    + " adrelid) FROM pg_attrdef WHERE adrelid = '" + plain.table() + "'::regclass AND adnum = 1"));
            byte[] value = new byte[100];
            List<OutboxMessage> batch = new ArrayList<>(BATCH);
            for (int i = 0; i < BATCH; i++) {
                batch.add(OutboxMessage.builder("orders", "key-" + i % 100).value(value).build());
            }
            System.out.printf("%d rows of 100 bytes, transactions of %d rows, %d round(s)%n", rows, BATCH, rounds);
            for (int round = 1; round <= rounds && !what.equals("harvest"); round++) {
                for (PostgresStore store : round % 2 == 1 ? List.of(plain, xidFirst) : List.of(xidFirst, plain)) {
                    BenchEnvironment.execute(pool, "TRUNCATE " + store.table());
                    BenchEnvironment.execute(pool, "VACUUM ANALYZE " + store.table());
                    double seconds = insert(pool, store, batch, rows);
                    System.out.printf("round %d  insert %-14s %8.2f s  %,10.0f rows/s%n", round,
                            store.table(), seconds, rows / seconds);
                }
            }
            for (int round = 1; round <= rounds && !what.equals("insert"); round++) {
                for (boolean read : round % 2 == 1 ? List.of(false, true) : List.of(true, false)) {
                    BenchEnvironment.execute(pool, "TRUNCATE " + xidFirst.table());
                    insert(pool, xidFirst, batch, rows);
                    BenchEnvironment.execute(pool, "VACUUM ANALYZE " + xidFirst.table());
                    double seconds = read ? readAndPurge(xidFirst, rows) : markAndPurge(xidFirst, rows);
                    System.out.printf("round %d  %-20s %8.2f s  %,10.0f rows/s%n", round,
                            read ? "read + purge" : "mark + purge", seconds, rows / seconds);
                }
            }
        }
        System.exit(0); // the embedded server's threads
    }

    private static double insert(HikariDataSource pool, PostgresStore store, List<OutboxMessage> batch, int rows)
            throws Exception {
        long started = System.nanoTime();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            for (int written = 0; written < rows; written += BATCH) {
                store.publisher().publish(c, batch);
                c.commit();
            }
        }
        return (System.nanoTime() - started) / 1e9;
    }

    private static double readAndPurge(PostgresStore store, int rows) {
        long started = System.nanoTime();
        long cursor = 0;
        int done = 0;
        while (done < rows) {
            List<OutboxRecord> records = store.read(cursor, List.of(), BATCH).rows().records();
            List<Long> ids = records.stream().map(OutboxRecord::id).toList();
            store.purge(ids);
            cursor = ids.get(ids.size() - 1);
            done += ids.size();
        }
        return (System.nanoTime() - started) / 1e9;
    }

    private static double markAndPurge(PostgresStore store, int rows) {
        UUID leader = UUID.randomUUID();
        long started = System.nanoTime();
        int done = 0;
        while (done < rows) {
            MarkResult marked = store.mark(leader, BATCH);
            List<Long> ids = marked.records().stream().map(OutboxRecord::id).toList();
            store.purge(ids);
            done += ids.size();
        }
        return (System.nanoTime() - started) / 1e9;
    }
}
