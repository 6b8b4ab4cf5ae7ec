package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Inbox;
import dev.outbox.testkit.InboxContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/** The inbox contract against a real Postgres; purges in batches of 7 so that a purge takes several. */
class PostgresInboxContractTest extends InboxContract {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static HikariDataSource pool;

    @BeforeAll
    static void startDatabase() {
        pool = PostgresTestSupport.pool(PostgresTestSupport.database("outbox_inbox_contract"), "inbox_contract", 6);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @Override
    protected Inbox createInbox() {
        PostgresInbox inbox = PostgresInbox.builder(pool).table("inbox_" + TABLES.incrementAndGet())
                .purgeBatchSize(7).build();
        inbox.createSchema();
        return inbox;
    }

    @Override
    protected DataSource dataSource() {
        return pool;
    }

    @Override
    protected void age(Inbox inbox, Duration age) {
        PostgresTestSupport.execute(pool, "UPDATE " + ((PostgresInbox) inbox).table()
                + " SET processed_at = processed_at - interval '" + age.toSeconds() + " seconds'");
    }

    @Override
    protected void disposeInbox(Inbox inbox) {
        PostgresInbox postgres = (PostgresInbox) inbox;
        PostgresTestSupport.execute(pool, "DROP TABLE " + postgres.table() + ", " + postgres.failedTable());
    }
}
