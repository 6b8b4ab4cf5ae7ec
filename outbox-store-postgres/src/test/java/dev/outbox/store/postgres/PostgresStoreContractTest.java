package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.StoreContract;
import dev.outbox.testkit.TestTransaction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicInteger;

/** The store contract against a real Postgres, the store on one connection pool and the writers on another. */
class PostgresStoreContractTest extends StoreContract {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static String url;
    private static DataSource admin;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_store_contract");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "contract_store", 8);
        appPool = PostgresTestSupport.pool(url, "contract_app", 12);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    @Override
    protected Store createStore() {
        return createStore(Integer.MAX_VALUE);
    }

    @Override
    protected Store createStore(int maxKeyLength) {
        PostgresStore created = PostgresStore.builder(storePool).table("contract_" + TABLES.incrementAndGet())
                .maxKeyLength(maxKeyLength).build();
        created.createSchema();
        return created;
    }

    @Override
    protected TestTransaction begin(Store store) {
        return JdbcTestTransaction.begin(appPool, store.publisher());
    }

    @Override
    protected void insertMalformedRow(Store store, String topic, String key) {
        // Two header names, one header value: written by hand, as another language might.
        String table = ((PostgresStore) store).table();
        PostgresTestSupport.execute(admin, "INSERT INTO " + table + " (topic, key, value, header_names, header_values)"
                + " VALUES ('" + topic + "', '" + key + "', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])");
    }

    @Override
    protected void insertRow(Store store, String topic, String key, int attempts) {
        PostgresTestSupport.execute(admin, "INSERT INTO " + ((PostgresStore) store).table()
                + " (topic, key, value, header_names, header_values, attempts)"
                + " VALUES ('" + topic + "', '" + key + "', 'x', '{}', '{}', " + attempts + ")");
    }

    @Override
    protected void disposeStore(Store store) {
        PostgresStore postgres = (PostgresStore) store;
        PostgresTestSupport.execute(admin, "DROP TABLE " + postgres.table() + ", " + postgres.parkedTable());
    }
}
