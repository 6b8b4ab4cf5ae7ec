package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.sql.SqlIdempotencyKeysContract;
import dev.outbox.testservers.Jdbc;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.BeforeAll;

/** Idempotency keys against a real H2, embedded, in memory. */
class H2IdempotencyTest extends SqlIdempotencyKeysContract {
    private static final String URL = "jdbc:h2:mem:outbox_idempotency;DB_CLOSE_DELAY=-1";

    H2IdempotencyTest() {
        super(H2Store::builder);
    }

    @Override
    protected String now() {
        return "CURRENT_TIMESTAMP";
    }

    @BeforeAll
    void startDatabase() {
        JdbcDataSource plain = new JdbcDataSource();
        plain.setURL(URL);
        plain.setUser("sa");
        admin = plain;
        storePool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 4, "h2-idem-store"));
        appPool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 8, "h2-idem-app"));
    }
}
