package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlLeaderTransportContract;
import org.junit.jupiter.api.BeforeAll;

/** The leader transport contract for leader election in a real Postgres. */
class PostgresLeaderTransportContractTest extends SqlLeaderTransportContract {
    PostgresLeaderTransportContractTest() {
        super(PostgresStore::builder);
    }

    @BeforeAll
    void startDatabase() {
        storePool = PostgresTestSupport.pool(PostgresTestSupport.database("outbox_lease_contract"), "lease_contract",
                12);
    }
}
