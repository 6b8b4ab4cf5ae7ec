package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The store's connections are killed ({@code pg_terminate_backend}) while a call is in the middle of its
 * statement: the call fails with a retriable {@link StoreException}, changed nothing, and a retry succeeds.
 * To catch the call mid-statement, a test transaction holds a lock the statement needs, and the test waits
 * until Postgres reports the store's backend waiting for it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresFailureTest {
    private static final int ROWS = 200;
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static DataSource admin;
    private static String url;

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_failure");
        admin = PostgresTestSupport.admin(url);
    }

    private record Fixture(PostgresStore store, HikariDataSource pool, String client) implements AutoCloseable {
        @Override
        public void close() {
            pool.close();
        }
    }

    private static Fixture fixture() {
        int n = TABLES.incrementAndGet();
        String client = "failure_store_" + n;
        HikariDataSource pool = PostgresTestSupport.pool(url, client, 4);
        PostgresStore store = PostgresStore.builder(pool).table("failure_" + n).build();
        store.createSchema();
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            messages.add(OutboxMessage.of("orders", "key-" + (i % 7), "v" + i));
        }
        try (Connection c = admin.getConnection()) {
            store.publisher().publish(c, messages);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return new Fixture(store, pool, client);
    }

    /**
     * Runs {@code call} on another thread while {@code lockSql} holds locks it needs, kills the store's
     * connections once the call waits for those locks, and returns what the call threw.
     */
    private static StoreException killMidStatement(Fixture fixture, String lockSql, Runnable call) throws Exception {
        try (Connection locker = admin.getConnection()) {
            locker.setAutoCommit(false);
            try (Statement s = locker.createStatement()) {
                s.execute(lockSql);
            }
            CompletableFuture<Void> running = CompletableFuture.runAsync(call);
            Await.untilOrFail(() -> waitingForALock(fixture.client()), Duration.ofSeconds(20),
                    () -> "the store's statement never waited for the lock; done: " + running.isDone());
            int killed = PostgresTestSupport.server().killConnections(fixture.client());
            assertThat(killed).as("connections killed").isPositive();
            try {
                running.get(20, TimeUnit.SECONDS);
                return fail("the call succeeded although its connection was killed");
            } catch (ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(StoreException.class);
                return (StoreException) e.getCause();
            } finally {
                locker.rollback();
            }
        }
    }

    private static boolean waitingForALock(String client) {
        return PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                + client + "' AND wait_event_type = 'Lock'") > 0;
    }

    /** Retries {@code call} on retriable failures, as the dispatcher does: the pool may still hold dead connections. */
    private static <T> T retry(Supplier<T> call) {
        StoreException last = null;
        for (int attempt = 0; attempt < 10; attempt++) {
            try {
                return call.get();
            } catch (StoreException e) {
                assertThat(e.isRetriable()).as("retriable: %s", e.getMessage()).isTrue();
                last = e;
            }
        }
        throw new AssertionError("still failing after 10 attempts", last);
    }

    private static List<Long> ids(List<OutboxRecord> records) {
        return records.stream().map(OutboxRecord::id).toList();
    }

    @Test
    void aConnectionKilledMidMarkIsARetriableFailureAndLosesNothing() throws Exception {
        try (Fixture f = fixture()) {
            UUID leader = UUID.randomUUID();

            StoreException failure = killMidStatement(f, "SELECT id FROM " + f.store().table()
                    + " WHERE id = (SELECT max(id) FROM " + f.store().table() + ") FOR UPDATE",
                    () -> f.store().mark(leader, ROWS));

            assertThat(failure.isRetriable()).as("retriable: %s", failure.getMessage()).isTrue();
            assertThat(failure.getMessage()).contains("marking up to " + ROWS + " rows");
            List<OutboxRecord> marked = retry(() -> f.store().mark(leader, ROWS)).records();
            assertThat(marked).as("every row is still there and unmarked by the failed call").hasSize(ROWS);
            assertThat(marked).extracting(r -> new String(r.message().value()))
                    .first().isEqualTo("v0");
            assertThat(f.store().backlog()).isEqualTo(ROWS);
        }
    }

    @Test
    void aConnectionKilledMidPurgeIsARetriableFailureAndDeletesNothing() throws Exception {
        try (Fixture f = fixture()) {
            UUID leader = UUID.randomUUID();
            List<Long> ids = ids(f.store().mark(leader, ROWS).records());

            StoreException failure = killMidStatement(f, "SELECT id FROM " + f.store().table()
                    + " WHERE id = " + ids.get(ROWS / 2) + " FOR UPDATE", () -> f.store().purge(ids));

            assertThat(failure.isRetriable()).as("retriable: %s", failure.getMessage()).isTrue();
            assertThat(retry(f.store()::backlog)).as("the purge was atomic: nothing deleted").isEqualTo(ROWS);
            retry(() -> {
                f.store().purge(ids);
                return null;
            });
            assertThat(f.store().backlog()).isZero();
        }
    }

    @Test
    void aConnectionKilledMidParkIsARetriableFailureAndTheRowsStayInTheOutbox() throws Exception {
        try (Fixture f = fixture()) {
            List<OutboxRecord> marked = f.store().mark(UUID.randomUUID(), 3).records();
            Map<Long, String> reasons = Map.of(marked.get(0).id(), "r0", marked.get(1).id(), "r1",
                    marked.get(2).id(), "r2");

            StoreException failure = killMidStatement(f, "SELECT id FROM " + f.store().table()
                    + " WHERE id = " + marked.get(2).id() + " FOR UPDATE", () -> f.store().park(reasons));

            assertThat(failure.isRetriable()).isTrue();
            assertThat(retry(() -> f.store().parked(10))).as("nothing parked").isEmpty();
            assertThat(f.store().backlog()).as("nothing removed from the outbox").isEqualTo(ROWS);
            f.store().park(reasons);
            assertThat(f.store().parked(10)).hasSize(3);
            assertThat(f.store().backlog()).isEqualTo(ROWS - 3);
        }
    }

    @Test
    void idleConnectionsKilledBetweenCallsFailAtMostRetriably() {
        try (Fixture f = fixture()) {
            UUID leader = UUID.randomUUID();
            assertThat(f.store().mark(leader, 10).records()).hasSize(10);

            PostgresTestSupport.server().killConnections(f.client());

            assertThat(retry(() -> f.store().mark(leader, 10)).records()).hasSize(10);
            assertThat(f.store().backlog()).isEqualTo(ROWS);
        }
    }
}
