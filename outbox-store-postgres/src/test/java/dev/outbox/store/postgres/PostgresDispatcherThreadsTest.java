package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No thread the store started for a dispatcher outlives {@link Dispatcher#close()} (#42): the commit listener's
 * {@code LISTEN} thread ({@code outbox-listen-<channel>}) has ended, and its connection is back in the pool, when
 * {@code close()} returns — so the pool closes right after without a warning — for an outbox and for a sharded one
 * (whose shards share one listener), as well as the dispatcher's own threads.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresDispatcherThreadsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static String url;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_dispatcher_threads");
        appPool = PostgresTestSupport.pool(url, "threads_app", 2);
    }

    @AfterAll
    static void closePool() {
        appPool.close();
    }

    @Test
    void closeStopsTheListenThreadAndTheDispatchersThreads() throws Exception {
        closeLeavesNoThread("threads_one", 1);
    }

    @Test
    void closeStopsTheSharedListenThreadOfASharedOutbox() throws Exception {
        closeLeavesNoThread("threads_sharded", 3);
    }

    private static void closeLeavesNoThread(String table, int shards) throws Exception {
        HikariDataSource storePool = PostgresTestSupport.pool(url, table + "_store", 6);
        try {
            PostgresStore store = PostgresStore.builder(storePool).table(table).shards(shards).build();
            store.createSchema();
            InMemoryBroker broker = new InMemoryBroker();
            String name = "threads-" + table;
            Dispatcher dispatcher = Dispatcher.builder(store, broker).name(name)
                    .config(DispatcherConfig.builder().drainTimeout(Duration.ofSeconds(5)).build()).build();
            dispatcher.start();
            Await.untilOrFail(() -> listenThreads(table) > 0, WAIT, () -> "the leader listens for commits on "
                    + table + "; threads: " + Thread.getAllStackTraces().keySet());
            try (Connection c = appPool.getConnection()) {
                c.setAutoCommit(false);
                store.publisher().publish(c, List.of(OutboxMessage.of("t", "k1", "v1"),
                        OutboxMessage.of("t", "k2", "v2")));
                c.commit();
            }
            Await.untilOrFail(() -> broker.deliveredCount() == 2 && store.backlog() == 0, WAIT,
                    () -> "delivered " + broker.deliveredCount());

            dispatcher.close();

            assertThat(Thread.getAllStackTraces().keySet()).as("threads alive after close() returned")
                    .noneMatch(t -> t.isAlive() && t.getName().startsWith("outbox-listen-" + table))
                    .noneMatch(t -> t.isAlive() && t.getName().startsWith(name));
            assertThat(storePool.getHikariPoolMXBean().getActiveConnections()).as("store connections in use")
                    .isZero();
        } finally {
            storePool.close();
        }
    }

    private static long listenThreads(String table) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("outbox-listen-" + table)).count();
    }
}
