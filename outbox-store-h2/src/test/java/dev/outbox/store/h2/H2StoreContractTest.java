package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.sql.SqlStoreContract;
import dev.outbox.testservers.Jdbc;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract against a real H2, embedded (H2's server is the JVM it runs in): an in-memory database kept
 * for the JVM's life, the store on one connection pool and the writers on another.
 */
class H2StoreContractTest extends SqlStoreContract {
    private static final String URL = "jdbc:h2:mem:outbox_store_contract;DB_CLOSE_DELAY=-1";

    H2StoreContractTest() {
        // The malformed row has two header names and one header value: written by hand, as another language might.
        super(H2Store::builder,
                "INSERT INTO ${table} (topic, \"key\", \"value\", header_names, header_values)"
                        + " VALUES ('${topic}', '${key}', X'78', ARRAY['a', 'b'], ARRAY[X'01'])",
                "INSERT INTO ${table} (topic, \"key\", \"value\", attempts)"
                        + " VALUES ('${topic}', '${key}', X'78', ${attempts})",
                "INSERT INTO ${table} (id, topic, \"key\", \"value\") VALUES (${id}, '${topic}', '${key}', X'78')");
    }

    @BeforeAll
    void startDatabase() {
        JdbcDataSource plain = new JdbcDataSource();
        plain.setURL(URL);
        plain.setUser("sa");
        admin = plain;
        storePool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 8, "h2-contract-store"));
        appPool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 12, "h2-contract-app"));
    }
}
