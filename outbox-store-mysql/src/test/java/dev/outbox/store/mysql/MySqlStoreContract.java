package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.StoreContract;
import dev.outbox.testkit.TestTransaction;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The store contract against a real server, the store on one connection pool and the writers on another. Run
 * for MySQL 8 and for MariaDB by the two subclasses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class MySqlStoreContract extends StoreContract {
    private final AtomicInteger tables = new AtomicInteger();
    private DataSource admin;
    private HikariDataSource storePool;
    private HikariDataSource appPool;

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_store_contract_" + suffix);
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "contract_store", 8);
        appPool = MySqlTestSupport.pool(kind(), url, "contract_app", 12);
    }

    @AfterAll
    void closePools() {
        storePool.close();
        appPool.close();
    }

    @Override
    protected Store createStore() {
        return createStore(MySqlStore.DEFAULT_MAX_KEY_LENGTH);
    }

    @Override
    protected Store createStore(int maxKeyLength) {
        MySqlStore created = MySqlStore.builder(storePool).table("contract_" + tables.incrementAndGet())
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
        // A header object without a name, written by hand, as another language might.
        String table = ((MySqlStore) store).table();
        MySqlTestSupport.execute(admin, "INSERT INTO " + table + " (topic, `key`, value, headers)"
                + " VALUES ('" + topic + "', '" + key + "', 'x', JSON_ARRAY(JSON_OBJECT('value', TO_BASE64('a'))))");
    }

    @Override
    protected void insertRow(Store store, String topic, String key, int attempts) {
        MySqlTestSupport.execute(admin, "INSERT INTO " + ((MySqlStore) store).table()
                + " (topic, `key`, value, attempts) VALUES ('" + topic + "', '" + key + "', 'x', " + attempts + ")");
    }

    @Override
    protected void disposeStore(Store store) {
        MySqlStore mysql = (MySqlStore) store;
        MySqlTestSupport.execute(admin, "DROP TABLE " + mysql.table() + ", " + mysql.parkedTable());
    }
}
