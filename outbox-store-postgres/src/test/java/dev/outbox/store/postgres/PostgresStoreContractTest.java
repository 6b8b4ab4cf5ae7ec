package dev.outbox.store.postgres;

import dev.outbox.store.sql.SqlStoreContract;
import org.junit.jupiter.api.BeforeAll;

/** The store contract against a real Postgres, the store on one connection pool and the writers on another. */
class PostgresStoreContractTest extends SqlStoreContract {

    PostgresStoreContractTest() {
        // The malformed row has two header names and one header value: written by hand, as another language might.
        super(PostgresStore::builder,
                "INSERT INTO ${table} (topic, key, value, header_names, header_values)"
                        + " VALUES ('${topic}', '${key}', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])",
                "INSERT INTO ${table} (topic, key, value, header_names, header_values, attempts)"
                        + " VALUES ('${topic}', '${key}', 'x', '{}', '{}', ${attempts})",
                "INSERT INTO ${table} (id, topic, key, value) VALUES (${id}, '${topic}', '${key}', 'x')");
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_store_contract");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "contract_store", 8);
        appPool = PostgresTestSupport.pool(url, "contract_app", 12);
    }
}
