package dev.outbox.store.postgres;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.sql.SqlStoreTests;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the Postgres store does beyond the contract: configuration, schema, raw SQL rows, timeouts, errors. */
class PostgresStoreTest extends SqlStoreTests<PostgresStore, PostgresStore.Builder> {

    PostgresStoreTest() {
        super(new Database<>(PostgresDialect.DIALECT, '"', PostgresStore::builder, "SQLSTATE 42P01",
                Duration.ofMillis(300), "SQLSTATE 57014"));
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_store_test");
        admin = PostgresTestSupport.admin(url);
        pool = PostgresTestSupport.pool(url, "store_test", 8);
    }

    // ---- configuration ------------------------------------------------------------------------------------
    @Test
    void aJdbiIsAnEntryPointToo() {
        assertThatThrownBy(() -> PostgresStore.builder((Jdbi) null)).hasMessageContaining("jdbi");
        assertThat(PostgresStore.builder(Jdbi.create(pool)).build().publisher().insertSql()).isEqualTo(
                "INSERT INTO \"outbox\" (topic, key, value, header_names, header_values, message_id)"
                        + " VALUES (?, ?, ?, ?, ?, ?)");
    }


    // ---- schema -------------------------------------------------------------------------------------------
    @Test
    void createSchemaWorksInAnotherSchema() {
        sql("CREATE SCHEMA IF NOT EXISTS app");
        PostgresStore store = builder().schema("app").build();
        store.createSchema();
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_tables WHERE schemaname = 'app'"
                + " AND tablename LIKE 't_%'")).as("the outbox, parked and leader tables").isEqualTo(3);
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_class"
                + " WHERE oid = '" + store.table() + "'::regclass AND 'fillfactor=70' = ANY(reloptions)"
                + " AND 'autovacuum_vacuum_scale_factor=0' = ANY(reloptions)"))
                .as("the table's storage settings").isEqualTo(1);
    }

    @Test
    void aPlainSqlInsertIsAValidMessage() {
        PostgresStore store = newStore();
        sql("INSERT INTO " + store.table() + " (topic, key, value) VALUES ('orders', 'order-17', 'hello')");
        sql("INSERT INTO " + store.table() + " (topic, key, value, header_names, header_values)"
                + " VALUES ('orders', 'order-17', NULL, ARRAY['trace', 'flag'], ARRAY['abc'::bytea, NULL])");

        List<OutboxRecord> records = store.mark(UUID.randomUUID(), 10).records();

        assertThat(records).hasSize(2);
        assertThat(records.get(0).message()).isEqualTo(OutboxMessage.of("orders", "order-17", "hello"));
        assertThat(records.get(1).message()).isEqualTo(OutboxMessage.builder("orders", "order-17")
                .header("trace", "abc").header("flag", (byte[]) null).build());
        assertThat(records.get(1).message().isTombstone()).isTrue();
    }

    // ---- bad rows written by hand -------------------------------------------------------------------------
    @Test
    void badHeaderArraysWrittenByHandAreRejectedWithAReasonAndDoNotStallOtherKeys() {
        PostgresStore store = newStore();
        String insert = "INSERT INTO " + store.table() + " (topic, key, value, header_names, header_values) VALUES ";
        sql(insert + "('orders', 'good-1', 'v1', '{}', '{}')");
        sql(insert + "('orders', 'bad-arrays', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])");
        sql(insert + "('orders', 'good-2', 'v2', '{}', '{}')");
        sql(insert + "('orders', 'bad-null-name', 'x', ARRAY['a', NULL], ARRAY['\\x01'::bytea, NULL])");
        sql(insert + "('orders', 'bad-2d', 'x', ARRAY[ARRAY['a'], ARRAY['b']], ARRAY[ARRAY['\\x01'::bytea],"
                + " ARRAY['\\x02'::bytea]])");
        sql(insert + "('orders', 'good-3', 'v3', ARRAY['h'], ARRAY['\\x00'::bytea])");

        Map<String, String> bad = new LinkedHashMap<>();
        bad.put("bad-arrays", "header_names has 2 elements but header_values has 1");
        bad.put("bad-null-name", "header_names[2] is null");
        bad.put("bad-2d", "header_names is not a one-dimensional text array");
        markAndParkTheRejected(store, List.of("good-1", "good-2", "good-3"), bad);
    }


    // ---- publisher ----------------------------------------------------------------------------------------
    @Test
    void publisherRejectsTheCharacterPostgresTextCannotHold() throws SQLException {
        PostgresStore store = newStore();
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> store.publisher().publish(c, OutboxMessage.of("t", "a\u0000b", "v")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 0").hasMessageContaining("U+0000").hasMessageContaining("a\\u0000b");
            assertThatThrownBy(() -> store.publisher().publish(c, OutboxMessage.builder("t", "k").header("x\u0000",
                    "v").build())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("header 0 name");
        }
        assertThat(store.backlog()).as("nothing was written").isZero();
    }


    // ---- failures, timeouts -------------------------------------------------------------------------------

    // ---- backlog ------------------------------------------------------------------------------------------

    @Test
    void backlogIsExactForSmallTablesAndAnEstimateAboveTheLimit() {
        PostgresStore store = newStore();
        sql("INSERT INTO " + store.table() + " (topic, key, value) SELECT 't', 'k' || i % 10, 'v'"
                + " FROM generate_series(1, 99999) i");
        assertThat(store.backlog()).isEqualTo(99_999);
        sql("INSERT INTO " + store.table() + " (topic, key, value) SELECT 't', 'k', 'v' FROM generate_series(1, 2)");
        assertThat(store.backlog()).as("not counted past the limit").isEqualTo(PostgresStore.EXACT_BACKLOG_LIMIT + 1);
        sql("INSERT INTO " + store.table() + " (topic, key, value) SELECT 't', 'k', 'v'"
                + " FROM generate_series(1, 50000) i");
        sql("ANALYZE " + store.table());

        assertThat(store.backlog()).as("estimate of 150,001 rows").isBetween(120_000L, 180_000L);
    }
}
