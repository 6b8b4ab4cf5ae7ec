package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.sql.SqlKeySequenceContract;
import dev.outbox.testservers.Jdbc;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.BeforeAll;

/** The per-key sequence and the replay marker against a real H2, embedded, in memory. */
class H2KeySequenceTest extends SqlKeySequenceContract {
    private static final String URL = "jdbc:h2:mem:outbox_key_sequence;DB_CLOSE_DELAY=-1";

    H2KeySequenceTest() {
        super(H2Store::builder);
    }

    @Override
    protected String keyColumn() {
        return "\"key\"";
    }

    @BeforeAll
    void startDatabase() {
        JdbcDataSource plain = new JdbcDataSource();
        plain.setURL(URL);
        plain.setUser("sa");
        admin = plain;
        storePool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 4, "h2-keyseq-store"));
        appPool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 8, "h2-keyseq-app"));
    }
}
