package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.StoreContract;
import dev.outbox.testkit.TestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The store contract for a SQL store, the store on one connection pool and the application's writers on another,
 * each test on tables of its own. A subclass starts the database and sets {@link #admin}, {@link #storePool} and
 * {@link #appPool} in a {@code @BeforeAll} method, and writes the rows by hand that only it knows how to.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlStoreContract extends StoreContract {
    private final AtomicInteger tables = new AtomicInteger();
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the store takes its connections from. */
    protected HikariDataSource storePool;
    /** The pool the application's transactions run on. */
    protected HikariDataSource appPool;

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    private final String malformedRowSql;
    private final String rowSql;

    /**
     * @param builders        a builder of the store under test on a data source
     * @param malformedRowSql an {@code INSERT} of a row the store cannot read as a message, with {@code ${table}},
     *                        {@code ${topic}} and {@code ${key}} standing for the values
     * @param rowSql          an {@code INSERT} of a valid row with no headers and the value {@code 'x'}, with
     *                        {@code ${table}}, {@code ${topic}}, {@code ${key}} and {@code ${attempts}}
     */
    protected SqlStoreContract(Function<DataSource, SqlStore.Builder<?, ?>> builders, String malformedRowSql,
                               String rowSql) {
        this.builders = builders;
        this.malformedRowSql = malformedRowSql;
        this.rowSql = rowSql;
    }

    @Override
    protected final Store createStore() {
        return create(builders.apply(storePool));
    }

    @Override
    protected final Store createStore(int maxKeyLength) {
        return create(builders.apply(storePool).maxKeyLength(maxKeyLength));
    }

    private Store create(SqlStore.Builder<?, ?> builder) {
        SqlStore created = builder.table("contract_" + tables.incrementAndGet()).build();
        created.createSchema();
        return created;
    }

    @Override
    protected final TestTransaction begin(Store store) {
        return JdbcTestTransaction.begin(appPool, store.publisher());
    }

    @Override
    protected final void disposeStore(Store store) {
        SqlStore sql = (SqlStore) store;
        Jdbc.execute(admin, "DROP TABLE " + sql.table() + ", " + sql.parkedTable());
    }

    @Override
    protected final void insertMalformedRow(Store store, String topic, String key) {
        Jdbc.execute(admin, fill(malformedRowSql, store, topic, key));
    }

    @Override
    protected final void insertRow(Store store, String topic, String key, int attempts) {
        Jdbc.execute(admin, fill(rowSql, store, topic, key).replace("${attempts}", Integer.toString(attempts)));
    }

    private static String fill(String sql, Store store, String topic, String key) {
        return sql.replace("${table}", ((SqlStore) store).table()).replace("${topic}", topic)
                .replace("${key}", key);
    }
}
