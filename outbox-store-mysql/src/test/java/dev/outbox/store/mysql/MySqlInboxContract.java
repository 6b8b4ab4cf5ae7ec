package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Inbox;
import dev.outbox.testkit.InboxContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/** The inbox contract against a real server, run for MySQL 8 and MariaDB; purges in batches of 7. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class MySqlInboxContract extends InboxContract {
    private final AtomicInteger tables = new AtomicInteger();
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_inbox_contract_" + suffix);
        pool = MySqlTestSupport.pool(kind(), url, "inbox_contract", 6);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    @Override
    protected Inbox createInbox() {
        MySqlInbox inbox = MySqlInbox.builder(pool).table("inbox_" + tables.incrementAndGet()).purgeBatchSize(7)
                .build();
        inbox.createSchema();
        return inbox;
    }

    @Override
    protected DataSource dataSource() {
        return pool;
    }

    @Override
    protected void age(Inbox inbox, Duration age) {
        MySqlTestSupport.execute(pool, "UPDATE " + ((MySqlInbox) inbox).table()
                + " SET processed_at = processed_at - INTERVAL " + age.toSeconds() + " SECOND");
    }

    @Override
    protected void disposeInbox(Inbox inbox) {
        MySqlInbox mysql = (MySqlInbox) inbox;
        MySqlTestSupport.execute(pool, "DROP TABLE " + mysql.table() + ", " + mysql.failedTable());
    }
}
