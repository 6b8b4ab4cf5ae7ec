package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Store;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.ShardedStoreContract;
import dev.outbox.testkit.TestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The sharded store contract for a SQL store: the store on one connection pool, the application's writers on
 * another, each test on sharded tables of its own. A subclass starts the database and sets {@link #admin},
 * {@link #storePool} and {@link #appPool} in a {@code @BeforeAll} method.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlShardedStoreContract extends ShardedStoreContract {
    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the store takes its connections from. */
    protected HikariDataSource storePool;
    /** The pool the application's transactions run on. */
    protected HikariDataSource appPool;

    /** @param builders a builder of the store under test on a data source */
    protected SqlShardedStoreContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    @AfterAll
    final void closePools() {
        storePool.close();
        appPool.close();
    }

    @Override
    protected final Store createStore(int shards) {
        SqlStore created = builders.apply(storePool).table("sharded_" + tables.incrementAndGet()).shards(shards)
                .build();
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
        Jdbc.execute(admin, "DROP TABLE " + sql.table() + ", " + sql.parkedTable() + ", " + sql.leaderTable());
    }
}
