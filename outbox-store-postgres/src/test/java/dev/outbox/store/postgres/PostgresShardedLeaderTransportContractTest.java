package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlShardedLeaderTransportContract;
import org.junit.jupiter.api.BeforeAll;

/** The sharded leader transport contract for shard leases in a real Postgres. */
class PostgresShardedLeaderTransportContractTest extends SqlShardedLeaderTransportContract {
    PostgresShardedLeaderTransportContractTest() {
        super(PostgresStore::builder);
    }

    @BeforeAll
    void startDatabase() {
        storePool = PostgresTestSupport.pool(PostgresTestSupport.database("outbox_shard_lease_contract"),
                "shard_lease_contract", 12);
    }
}
