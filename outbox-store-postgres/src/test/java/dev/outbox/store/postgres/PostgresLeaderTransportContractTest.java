package dev.outbox.store.postgres;

import dev.outbox.DispatcherConfig;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.store.sql.SqlLeaderTransportContract;
import dev.outbox.store.sql.SqlShardedLeaderTransport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The leader transport contract for leader election in a real Postgres, and what its builders refuse. */
class PostgresLeaderTransportContractTest extends SqlLeaderTransportContract {
    PostgresLeaderTransportContractTest() {
        super(PostgresStore::builder);
    }

    @BeforeAll
    void startDatabase() {
        storePool = PostgresTestSupport.pool(PostgresTestSupport.database("outbox_lease_contract"), "lease_contract",
                12);
    }

    /**
     * A sharded store's dispatchers elect shard leaders, not one: the unsharded builder says so; the builders check
     * the timings when they build, naming the setting; the lease table's DDL is printable.
     */
    @Test
    void theBuildersRefuseAShardedStoreAndBadTimingsNamingThem() {
        PostgresStore sharded = PostgresStore.builder(storePool).table("refused_sharded").shards(4).build();
        assertThatThrownBy(() -> SqlLeaderTransport.builder(sharded))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 4 shards")
                .hasMessageContaining("SqlShardedLeaderTransport");
        assertThat(SqlShardedLeaderTransport.builder(sharded).build().shards()).isEqualTo(4);

        PostgresStore store = PostgresStore.builder(storePool).table("refused_timings").build();
        DispatcherConfig config = DispatcherConfig.builder().heartbeatTimeout(Duration.ofSeconds(2)).build();
        assertThatThrownBy(() -> SqlLeaderTransport.builder(store).dispatcherConfig(config)
                .renewInterval(Duration.ofSeconds(1)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("renewInterval (1000 ms)");
        assertThatThrownBy(() -> SqlShardedLeaderTransport.builder(sharded).dispatcherConfig(config)
                .leaseDuration(Duration.ofSeconds(5)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("leaseDuration (5000 ms)");
        assertThat(SqlLeaderTransport.builder(store).build().schemaSql())
                .startsWith("CREATE TABLE IF NOT EXISTS \"refused_timings_lease\"");
    }
}
