package dev.outbox.store.sql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.Heartbeat;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.ShardedLeaderTransportContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static dev.outbox.store.sql.SqlLeaderTransportContract.ACQUIRE;
import static dev.outbox.store.sql.SqlLeaderTransportContract.CONFIG;
import static dev.outbox.store.sql.SqlLeaderTransportContract.DELIVERY;
import static dev.outbox.store.sql.SqlLeaderTransportContract.LEASE;
import static dev.outbox.store.sql.SqlLeaderTransportContract.POLL;
import static dev.outbox.store.sql.SqlLeaderTransportContract.RENEW;
import static org.assertj.core.api.Assertions.assertThat;

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

    /**
     * A member that asked for a lease and then closes withdraws its request ({@code wanted_by}): the others stop
     * counting it as a member at once, not a lease later. Member a holds all six shards; b joins and asks a for one
     * (its request shows in the lease table), then closes before a reads the table again. Its request is gone from
     * the table, and a, polling on for three acquire intervals (well within the request's lease), keeps all six and
     * revokes none: with the request left behind, a would count two members and give the asked-for shard up, and
     * nobody would lead it until the request lapsed.
     */
    @Test
    void aMemberThatClosesWithdrawsItsRequestAndStopsCountingAtOnce() {
        SqlStore store = builders.apply(storePool).table("shard_withdrawn_" + tables.incrementAndGet()).shards(SHARDS)
                .build();
        store.createSchema();
        SqlLease table = new SqlLease(store, store.leaseStatements().orElseThrow(), Duration.ofSeconds(5), LEASE);
        List<String> heardByA = new CopyOnWriteArrayList<>();
        SqlShardedLeaderTransport a = transport(store);
        SqlShardedLeaderTransport b = transport(store);
        try {
            a.start(listener(heardByA));
            Await.untilOrFail(() -> {
                a.poll(POLL);
                return a.assignedShards().size() == SHARDS;
            }, Duration.ofSeconds(10), () -> "a takes all six shards: " + a);
            b.start(listener(new CopyOnWriteArrayList<>()));
            Await.untilOrFail(() -> {
                b.poll(POLL);
                return table.rows(SHARDS).stream().anyMatch(r -> r.wantedBy() != null);
            }, Duration.ofSeconds(10), () -> "b asks a for a shard: " + table.rows(SHARDS));
            assertThat(b.assignedShards()).isEmpty();
            b.close();
            assertThat(table.rows(SHARDS)).as("b's request withdrawn on its close").allMatch(r -> r.wantedBy() == null);

            long until = System.nanoTime() + ACQUIRE.multipliedBy(3).plus(POLL).toNanos();
            while (System.nanoTime() - until < 0) {
                a.poll(POLL);
            }
            assertThat(a.assignedShards()).as("a keeps all six").hasSize(SHARDS);
            assertThat(heardByA).as("a's shard events").isNotEmpty()
                    .noneMatch(e -> e.startsWith("revoked") || e.startsWith("lost"));
        } finally {
            b.close();
            a.close();
        }
    }

    private static SqlShardedLeaderTransport transport(SqlStore store) {
        return SqlShardedLeaderTransport.builder(store).dispatcherConfig(CONFIG).deliveryTimeout(DELIVERY)
                .leaseDuration(LEASE).renewInterval(RENEW).acquireInterval(ACQUIRE).build();
    }

    /** A listener that notes each gain, revocation and loss in {@code events}. */
    private static ShardedLeaderTransport.Listener listener(List<String> events) {
        return new ShardedLeaderTransport.Listener() {
            @Override
            public void assigned(Set<Integer> shards) {
                events.add("assigned " + new java.util.TreeSet<>(shards));
            }

            @Override
            public void revoked(Set<Integer> shards) {
                events.add("revoked " + new java.util.TreeSet<>(shards));
            }

            @Override
            public void lost(Set<Integer> shards) {
                events.add("lost " + new java.util.TreeSet<>(shards));
            }

            @Override
            public void heartbeat(int shard, Heartbeat heartbeat) {
            }
        };
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
