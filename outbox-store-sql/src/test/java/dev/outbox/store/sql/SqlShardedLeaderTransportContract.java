package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.testkit.ShardedLeaderTransportContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static dev.outbox.store.sql.SqlLeaderTransportContract.ACQUIRE;
import static dev.outbox.store.sql.SqlLeaderTransportContract.CONFIG;
import static dev.outbox.store.sql.SqlLeaderTransportContract.DELIVERY;
import static dev.outbox.store.sql.SqlLeaderTransportContract.LEASE;
import static dev.outbox.store.sql.SqlLeaderTransportContract.POLL;
import static dev.outbox.store.sql.SqlLeaderTransportContract.RENEW;

/**
 * The sharded leader transport contract for shard leases in the database ({@link SqlShardedLeaderTransport}): each
 * test's group is the lease table of a sharded outbox table of its own, with the timings of
 * {@link SqlLeaderTransportContract}. A subclass starts the database and sets {@link #storePool} in a
 * {@code @BeforeAll} method.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlShardedLeaderTransportContract extends ShardedLeaderTransportContract {
    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    /** The pool the stores and the transports take their connections from. */
    protected HikariDataSource storePool;

    /** @param builders a builder of the store under test on a data source */
    protected SqlShardedLeaderTransportContract(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    @AfterAll
    final void closePool() {
        storePool.close();
    }

    @Override
    protected final Group newGroup() {
        SqlStore store = builders.apply(storePool).table("shard_elected_" + tables.incrementAndGet()).shards(SHARDS)
                .build();
        store.createSchema();
        return name -> SqlShardedLeaderTransport.builder(store).dispatcherConfig(CONFIG).deliveryTimeout(DELIVERY)
                .leaseDuration(LEASE).renewInterval(RENEW).acquireInterval(ACQUIRE).build();
    }

    /**
     * Spreading moves one shard per acquire interval or so (ask, drain, release, take): 20 s is plenty. A crashed
     * member's leases were last renewed at most a renew interval and a poll before the crash.
     */
    @Override
    protected final Timings timings() {
        return new Timings(POLL, java.time.Duration.ofSeconds(20), LEASE.minus(RENEW).minus(POLL),
                LEASE.plus(ACQUIRE).plus(POLL).plusSeconds(1));
    }
}
