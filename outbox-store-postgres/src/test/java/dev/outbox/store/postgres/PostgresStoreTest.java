package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StoreException;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the Postgres store does beyond the contract: configuration, schema, raw SQL rows, timeouts, errors. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresStoreTest {
    private static final AtomicInteger TABLES = new AtomicInteger();
    private static String url;
    private static DataSource admin;
    private static HikariDataSource pool;

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_store_test");
        admin = PostgresTestSupport.admin(url);
        pool = PostgresTestSupport.pool(url, "store_test", 8);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    private static PostgresStore.Builder builder() {
        return PostgresStore.builder(pool).table("t_" + TABLES.incrementAndGet());
    }

    private static PostgresStore newStore() {
        PostgresStore store = builder().build();
        store.createSchema();
        return store;
    }

    private static void sql(String sql) {
        PostgresTestSupport.execute(admin, sql);
    }

    private static void commit(PostgresStore store, OutboxMessage... messages) {
        try (Connection c = pool.getConnection()) {
            store.publisher().publish(c, List.of(messages));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String valueOf(OutboxRecord record) {
        return new String(record.message().value(), StandardCharsets.UTF_8);
    }

    // ---- decorators ---------------------------------------------------------------------------------------

    @Test
    void decoratorsTransformEveryMessageInTheOrderTheyWereAdded() {
        PostgresStore store = builder()
                .decorator(m -> m.withHeader(dev.outbox.Header.of("first", "1")))
                .decorator(m -> m.withHeaderReplaced("first", "replaced").withHeader(dev.outbox.Header.of("topic",
                        m.topic())))
                .build();
        store.createSchema();
        commit(store, OutboxMessage.builder("orders", "k").value("v").header("app", "a").build(),
                OutboxMessage.of("payments", "k", "w"));

        List<OutboxRecord> marked = store.mark(UUID.randomUUID(), 10).records();
        assertThat(marked).hasSize(2);
        assertThat(marked.get(0).message().headers()).extracting(dev.outbox.Header::name)
                .containsExactly("app", "first", "topic");
        assertThat(marked.get(0).message().headers()).extracting(dev.outbox.Header::valueAsString)
                .containsExactly("a", "replaced", "orders");
        assertThat(marked.get(1).message().headers()).extracting(dev.outbox.Header::valueAsString)
                .containsExactly("replaced", "payments");
        assertThat(valueOf(marked.get(1))).isEqualTo("w");
    }

    @Test
    void aThrowingDecoratorRejectsTheMessageNamingItAndWritesNothingOfTheCall() {
        PostgresStore store = builder().decorator(m -> {
            if (m.key().startsWith("forbidden")) {
                throw new IllegalArgumentException("tenant missing");
            }
            return m;
        }).build();
        store.createSchema();

        assertThatThrownBy(() -> commit(store, OutboxMessage.of("orders", "fine", "1"),
                OutboxMessage.of("orders", "forbidden-1", "2")))
                .isInstanceOf(dev.outbox.MessageRejectedException.class)
                .hasMessageContaining("message 1 (topic 'orders', key 'forbidden-1')")
                .hasMessageContaining("tenant missing")
                .hasCauseInstanceOf(IllegalArgumentException.class);
        assertThat(store.backlog()).as("nothing of the rejected call was written").isZero();
        PostgresStore returnsNull = builder().decorator(m -> null).build();
        assertThatThrownBy(() -> commit(returnsNull, OutboxMessage.of("orders", "k", "v")))
                .isInstanceOf(dev.outbox.MessageRejectedException.class)
                .hasMessageContaining("returned null");
        commit(store, OutboxMessage.of("orders", "fine", "3"));
        assertThat(store.backlog()).isEqualTo(1);
    }

    // ---- configuration ------------------------------------------------------------------------------------

    @Test
    void tableAndSchemaNamesAreValidatedAndTheErrorNamesTheBadValue() {
        PostgresStore.Builder builder = PostgresStore.builder(pool);
        for (String bad : List.of("Outbox", "out-box", "outbox; DROP TABLE users", "1outbox", "out box",
                "\"outbox\"", "outbox\u0000")) {
            assertThatThrownBy(() -> builder.table(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("table name '" + bad + "'");
            assertThatThrownBy(() -> builder.schema(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("schema name '" + bad + "'");
        }
        String tooLong = "t".repeat(57);
        assertThatThrownBy(() -> builder.table(tooLong)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(tooLong).hasMessageContaining("56").hasMessageContaining("_parked");
        assertThat(builder.table("t".repeat(56)).build().parkedTable()).isEqualTo('"' + "t".repeat(56) + "_parked\"");
        assertThatThrownBy(() -> builder.schema("s".repeat(64))).hasMessageContaining("63");
        assertThatThrownBy(() -> builder.table("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> builder.table(null)).hasMessageContaining("null");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ZERO)).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ofMillis(-5))).hasMessageContaining("-0.005");
        assertThatThrownBy(() -> builder.maxKeyLength(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> PostgresStore.builder((DataSource) null)).hasMessageContaining("dataSource");
        assertThatThrownBy(() -> PostgresStore.builder((Jdbi) null)).hasMessageContaining("jdbi");
    }

    @Test
    void defaultsAndQuotedNames() {
        PostgresStore store = PostgresStore.builder(pool).build();
        assertThat(store.table()).isEqualTo("\"outbox\"");
        assertThat(store.parkedTable()).isEqualTo("\"outbox_parked\"");
        assertThat(store.statementTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(store.maxKeyLength()).isEqualTo(Integer.MAX_VALUE);
        PostgresStore qualified = PostgresStore.builder(pool).schema("app").table("events").build();
        assertThat(qualified.table()).isEqualTo("\"app\".\"events\"");
        assertThat(qualified.schemaSql()).contains("CREATE TABLE IF NOT EXISTS \"app\".\"events\" (")
                .contains("CREATE TABLE IF NOT EXISTS \"app\".\"events_parked\" (")
                .doesNotContain("${");
    }

    // ---- schema -------------------------------------------------------------------------------------------

    @Test
    void createSchemaIsIdempotentSafeConcurrentlyAndWorksInAnotherSchema() throws Exception {
        sql("CREATE SCHEMA IF NOT EXISTS app");
        PostgresStore store = PostgresStore.builder(Jdbi.create(pool)).schema("app").table("events_" + TABLES.incrementAndGet())
                .build();
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                calls.add(threads.submit(store::createSchema));
            }
            for (Future<?> call : calls) {
                call.get(30, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        store.createSchema();
        commit(store, OutboxMessage.of("topic", "k", "v"));

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(PostgresStoreTest::valueOf)
                .containsExactly("v");
        assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM pg_tables WHERE schemaname = 'app'"
                + " AND tablename LIKE 'events_%'")).isEqualTo(2);
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
    void badRowsWrittenByHandAreRejectedWithAReasonAndDoNotStallOtherKeys() {
        PostgresStore store = builder().maxKeyLength(16).build();
        store.createSchema();
        String t = store.table();
        String insert = "INSERT INTO " + t + " (topic, key, value, header_names, header_values) VALUES ";
        sql(insert + "('orders', 'good-1', 'v1', '{}', '{}')");
        sql(insert + "('orders', 'bad-arrays', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])");
        sql(insert + "('orders', 'good-2', 'v2', '{}', '{}')");
        sql(insert + "('orders', 'bad-null-name', 'x', ARRAY['a', NULL], ARRAY['\\x01'::bytea, NULL])");
        sql(insert + "('orders', 'bad-2d', 'x', ARRAY[ARRAY['a'], ARRAY['b']], ARRAY[ARRAY['\\x01'::bytea],"
                + " ARRAY['\\x02'::bytea]])");
        sql(insert + "('orders', 'key-longer-than-sixteen', 'x', '{}', '{}')");
        sql(insert + "('has space', 'bad-topic', 'x', '{}', '{}')");
        sql(insert + "('', 'empty-topic', 'x', '{}', '{}')");
        sql(insert + "('orders', 'good-3', 'v3', ARRAY['h'], ARRAY['\\x00'::bytea])");

        MarkResult result = store.mark(UUID.randomUUID(), 100);

        assertThat(result.records()).extracting(OutboxRecord::key).containsExactly("good-1", "good-2", "good-3");
        Map<String, String> reasons = new HashMap<>();
        for (MarkResult.Rejected r : result.rejected()) {
            reasons.put(r.key(), r.reason());
        }
        assertThat(result.rejected()).extracting(MarkResult.Rejected::key).containsExactly("bad-arrays",
                "bad-null-name", "bad-2d", "key-longer-than-sixteen", "bad-topic", "empty-topic");
        assertThat(reasons.get("bad-arrays")).contains("header_names has 2 elements but header_values has 1");
        assertThat(reasons.get("bad-null-name")).contains("header_names[2] is null");
        assertThat(reasons.get("bad-2d")).contains("header_names is not a one-dimensional text array");
        assertThat(reasons.get("key-longer-than-sixteen")).contains("23 characters").contains("16")
                .contains("key-longer-than-sixteen");
        assertThat(reasons.get("bad-topic")).contains("'has space'");
        assertThat(reasons.get("empty-topic")).contains("topic must not be blank");

        Map<Long, String> park = new HashMap<>();
        for (MarkResult.Rejected r : result.rejected()) {
            park.put(r.id(), "unreadable: " + r.reason());
        }
        store.park(park);
        assertThat(store.parked(100)).extracting(ParkedRecord::key).containsExactly("bad-arrays",
                "bad-null-name", "bad-2d", "key-longer-than-sixteen", "bad-topic", "empty-topic");
        assertThat(store.parked(100).get(0).reason()).startsWith("unreadable: header_names has 2 elements");
        assertThat(store.backlog()).isEqualTo(3);
    }

    // ---- publisher ----------------------------------------------------------------------------------------

    @Test
    void publisherValidatesBeforeWritingAndNamesTheBadMessage() throws SQLException {
        PostgresStore store = builder().maxKeyLength(8).build();
        store.createSchema();
        PostgresPublisher publisher = store.publisher();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> publisher.publish(c, List.of(OutboxMessage.of("t", "ok", "v"),
                    OutboxMessage.of("t", "much-too-long", "v"))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 1").hasMessageContaining("13 characters")
                    .hasMessageContaining("maxKeyLength 8").hasMessageContaining("much-too-long");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.of("t", "a\u0000b", "v")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 0").hasMessageContaining("U+0000").hasMessageContaining("a\\u0000b");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.builder("t", "k").header("x\u0000", "v")
                    .build())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("header 0 name");
            assertThatThrownBy(() -> publisher.publish((Connection) null, List.of()))
                    .hasMessageContaining("connection");
            c.commit();
        }
        assertThat(store.backlog()).as("nothing was written").isZero();
    }

    @Test
    void publisherWritesInTheCallersTransactionOnAConnectionOrAJdbiHandle() throws SQLException {
        PostgresStore store = newStore();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, OutboxMessage.of("t", "k", "rolled back"));
            c.rollback();
            store.publisher().publish(c, List.of(OutboxMessage.of("t", "k", "one"), OutboxMessage.of("t", "k", "two")));
            assertThat(store.backlog()).as("not committed yet").isZero();
            c.commit();
            assertThat(c.getAutoCommit()).as("auto-commit untouched").isFalse();
            assertThat(c.isClosed()).as("connection left open").isFalse();
        }
        Jdbi.create(pool).useTransaction(handle -> {
            store.publisher().publish(handle, OutboxMessage.of("t", "k", "three"));
            store.publisher().publish(handle, List.of(OutboxMessage.of("t", "k", "four")));
        });
        Jdbi.create(pool).useTransaction(handle -> {
            store.publisher().publish(handle, OutboxMessage.of("t", "k", "rolled back too"));
            handle.rollback();
        });

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(PostgresStoreTest::valueOf)
                .containsExactly("one", "two", "three", "four");
    }

    @Test
    void publisherReportsADatabaseFailureAsAStoreException() throws SQLException {
        PostgresStore store = builder().build(); // no createSchema: the table is missing
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> store.publisher().publish(c, OutboxMessage.of("t", "k", "v")))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isFalse())
                    .hasMessageContaining("42P01").hasMessageContaining(store.table());
        }
    }

    // ---- failures, timeouts -------------------------------------------------------------------------------

    @Test
    void aMissingTableIsAnErrorThatIsNotRetriable() {
        PostgresStore store = builder().build();

        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                .isInstanceOfSatisfying(StoreException.class, e -> {
                    assertThat(e.isRetriable()).isFalse();
                    assertThat(e.getCause()).isInstanceOf(Exception.class);
                })
                .hasMessageContaining("42P01").hasMessageContaining("marking up to 10 rows of " + store.table());
        assertThatThrownBy(() -> store.purge(List.of(1L))).isInstanceOf(StoreException.class);
        assertThatThrownBy(store::backlog).isInstanceOf(StoreException.class);
    }

    @Test
    void aStatementThatExceedsTheTimeoutFailsRetriablyInsteadOfHanging() throws Exception {
        PostgresStore store = builder().statementTimeout(Duration.ofMillis(300)).build();
        store.createSchema();
        commit(store, OutboxMessage.of("t", "k", "v"));
        try (Connection locker = admin.getConnection()) {
            locker.setAutoCommit(false);
            locker.createStatement().execute("SELECT id FROM " + store.table() + " FOR UPDATE");
            long started = System.nanoTime();

            assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue())
                    .hasMessageContaining("57014");
            assertThatThrownBy(() -> store.purge(List.of(1L)))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue());
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
            locker.rollback();
        }
        assertThat(store.mark(UUID.randomUUID(), 10).records()).hasSize(1);
        assertThat(store.backlog()).isEqualTo(1);
    }

    @Test
    void argumentsAreValidated() {
        PostgresStore store = newStore();
        assertThatThrownBy(() -> store.purge(null)).hasMessageContaining("ids");
        assertThatThrownBy(() -> store.purge(java.util.Arrays.asList(1L, null))).hasMessageContaining("position 1");
        assertThatThrownBy(() -> store.reset(null, List.of(1L))).hasMessageContaining("leaderId");
        assertThatThrownBy(() -> store.park(null)).hasMessageContaining("reasons");
        assertThatThrownBy(() -> store.parked(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> store.replay(null)).hasMessageContaining("ids");
    }

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
