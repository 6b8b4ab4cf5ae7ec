package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlKeySequenceContract;
import org.junit.jupiter.api.BeforeAll;

/** The per-key sequence and the replay marker against a real Postgres. */
class PostgresKeySequenceTest extends SqlKeySequenceContract {

    PostgresKeySequenceTest() {
        super(PostgresStore::builder);
    }

    @Override
    protected String keyColumn() {
        return "key";
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_key_sequence");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "keyseq_store", 4);
        appPool = PostgresTestSupport.pool(url, "keyseq_app", 8);
    }
}
