package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlShardedStoreContract;
import org.junit.jupiter.api.BeforeAll;

/** The sharded store contract against a real Postgres. */
class PostgresShardedStoreContractTest extends SqlShardedStoreContract {

    PostgresShardedStoreContractTest() {
        super(PostgresStore::builder);
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_sharded_contract");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "sharded_store", 4);
        appPool = PostgresTestSupport.pool(url, "sharded_app", 2);
    }
}
