package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.StreamStoreContract;
import dev.outbox.testkit.TestTransaction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The test kit's {@link StreamStoreContract} (the harvest cases in WAL mode) against a real Postgres with
 * {@code wal_level=logical}: each test gets a fresh outbox table and its own replication slot, dropped after it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresWalStoreContractTest extends StreamStoreContract {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static String url;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_wal_contract");
        storePool = PostgresTestSupport.pool(url, "wal_contract_store", 4);
        appPool = PostgresTestSupport.pool(url, "wal_contract_app", 4);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    @Override
    protected Store createStore() {
        PostgresStore store = PostgresStore.builder(storePool).table("wal_contract_" + TABLES.incrementAndGet())
                .statementTimeout(Duration.ofSeconds(5))
                .walHarvest(PostgresTestSupport.walHarvest(url, "wal_contract").readWait(Duration.ofMillis(50)).build())
                .build();
        store.createSchema();
        return store;
    }

    @Override
    protected TestTransaction begin(Store store) {
        return JdbcTestTransaction.begin(appPool, store.publisher());
    }

    @Override
    protected void disposeStore(Store store) {
        ((PostgresStore) store).dropSlot();
    }
}
