package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.sql.ScheduledMessagesContract;
import dev.outbox.testservers.Jdbc;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.BeforeAll;

/** "Not before" against a real H2, embedded, in memory. */
class H2ScheduledMessagesTest extends ScheduledMessagesContract {
    private static final String URL = "jdbc:h2:mem:outbox_scheduled;DB_CLOSE_DELAY=-1";

    H2ScheduledMessagesTest() {
        super(H2Store::builder);
    }

    @Override
    protected String microsUntilDueSql(String table) {
        return "SELECT DATEDIFF(MICROSECOND, CURRENT_TIMESTAMP, MIN(due_at)) FROM " + table;
    }

    @BeforeAll
    void startDatabase() {
        JdbcDataSource plain = new JdbcDataSource();
        plain.setURL(URL);
        plain.setUser("sa");
        admin = plain;
        storePool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 4, "h2-sched-store"));
        appPool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 8, "h2-sched-app"));
    }
}
