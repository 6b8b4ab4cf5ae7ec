package dev.outbox.store.postgres;

import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlKeySequence;
import dev.outbox.store.sql.SqlKeySequenceContract;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The per-key sequence and the replay marker against a real Postgres; and the WAL mode's publisher, whose messages
 * are delivered in commit order: a key's numbers follow it.
 */
class PostgresKeySequenceTest extends SqlKeySequenceContract {

    PostgresKeySequenceTest() {
        super(PostgresStore::builder);
    }

    @Override
    protected String keyColumn() {
        return "key";
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_key_sequence");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "keyseq_store", 4);
        appPool = PostgresTestSupport.pool(url, "keyseq_app", 8);
    }

    /**
     * Writers of one key race in WAL mode, each in its own transaction: the slot streams the committed messages in
     * commit order, and the key's numbers in that order are exactly 1..N.
     */
    @Test
    void inWalModeAKeysNumbersFollowTheCommitOrder() throws Exception {
        PostgresStore store = PostgresStore.builder(storePool).table("keyseq_wal").keySequence(true).build();
        store.createSchema();
        SqlTableNames names = PostgresDialect.DIALECT.tableNames().names(null, "keyseq_wal");
        String prefix = WalSql.prefix(names);
        PostgresPublisher publisher = new PostgresPublisher(names, 100, 30, MessageDecorators.none(), prefix, null,
                SqlKeySequence.on(new PgKeyCounter(SqlKeySequence.table(names), 30)));
        LogicalSlot.createPublication(admin, "keyseq_wal");
        long seed = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (LogicalSlot slot = new LogicalSlot(admin, "keyseq_wal", "keyseq_wal")) {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Integer>> writers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Random random = new Random(seed + t);
                writers.add(pool.submit(() -> {
                    start.await();
                    int written = 0;
                    for (int round = 0; round < 30; round++) {
                        List<OutboxMessage> batch = new ArrayList<>();
                        for (int i = 1 + random.nextInt(2); i > 0; i--) {
                            batch.add(OutboxMessage.of("orders", "hot", "v"));
                        }
                        try (Connection c = appPool.getConnection()) {
                            c.setAutoCommit(false);
                            publisher.publish(c, batch);
                            c.commit();
                        }
                        written += batch.size();
                    }
                    return written;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> w : writers) {
                total += w.get(120, TimeUnit.SECONDS);
            }

            List<Long> numbers = new ArrayList<>();
            for (LogicalSlot.Message m : slot.take(prefix)) {
                WalCodec.Decoded decoded = WalCodec.decode(m.content(), 100);
                assertThat(decoded.error()).isNull();
                numbers.add(KeySequence.decode(KeySequence.SEQUENCE,
                        KeySequence.last(decoded.message().headers(), KeySequence.SEQUENCE)));
            }
            assertThat(numbers).as("in commit order, seed %d", seed)
                    .containsExactlyElementsOf(LongStream.rangeClosed(1, total).boxed().toList());
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            PostgresTestSupport.execute(admin, "DROP TABLE " + store.table() + ", " + store.parkedTable() + ", "
                    + store.leaderTable() + ", " + SqlKeySequence.table(names));
        }
    }
}
