package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlIdempotencyKeysContract;
import org.junit.jupiter.api.BeforeAll;

/** Idempotency keys against a real Postgres. */
class PostgresIdempotencyTest extends SqlIdempotencyKeysContract {

    PostgresIdempotencyTest() {
        super(PostgresStore::builder);
    }

    @Override
    protected String now() {
        return "now()";
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_idempotency");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "idem_store", 4);
        appPool = PostgresTestSupport.pool(url, "idem_app", 8);
    }
}
