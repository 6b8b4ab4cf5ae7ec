package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.StoreException;
import dev.outbox.testservers.JdbcServer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the MySQL store does beyond the contract: configuration, schema, rows written by hand, the publisher,
 * timeouts, errors, large id batches, time zones, and leaving pooled connections as it found them. Run for MySQL 8
 * and MariaDB by the subclasses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class MySqlStoreTests {
    private final AtomicInteger tables = new AtomicInteger();
    private String url;
    private DataSource admin;
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    private String suffix() {
        return kind().name().toLowerCase(Locale.ROOT);
    }

    @BeforeAll
    void startDatabase() {
        url = MySqlTestSupport.database(kind(), "outbox_store_test_" + suffix());
        admin = MySqlTestSupport.admin(kind(), url);
        pool = MySqlTestSupport.pool(kind(), url, "store_test", 8);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    private MySqlStore.Builder builder() {
        return MySqlStore.builder(pool).table("t_" + tables.incrementAndGet());
    }

    private MySqlStore newStore() {
        MySqlStore store = builder().build();
        store.createSchema();
        return store;
    }

    private void sql(String sql) {
        MySqlTestSupport.execute(admin, sql);
    }

    private void commit(MySqlStore store, OutboxMessage... messages) {
        try (Connection c = pool.getConnection()) {
            store.publisher().publish(c, List.of(messages));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String valueOf(OutboxRecord record) {
        return new String(record.message().value(), StandardCharsets.UTF_8);
    }

    private List<OutboxRecord> markAll(MySqlStore store) {
        UUID leader = UUID.randomUUID();
        List<OutboxRecord> all = new ArrayList<>();
        while (true) {
            MarkResult result = store.mark(leader, 700);
            if (result.isEmpty()) {
                return all;
            }
            all.addAll(result.records());
        }
    }

    // ---- decorators ---------------------------------------------------------------------------------------

    @Test
    void decoratorsTransformMessagesAndAThrowingOneRejectsTheCallNamingTheMessage() {
        MySqlStore store = builder()
                .decorator(m -> {
                    if (m.key().equals("forbidden")) {
                        throw new IllegalStateException("no tenant");
                    }
                    return m.withHeader(dev.outbox.Header.of("tenant", "t1"));
                })
                .decorator(m -> m.withHeaderReplaced("tenant", "t2"))
                .build();
        store.createSchema();

        assertThatThrownBy(() -> commit(store, OutboxMessage.of("orders", "fine", "1"),
                OutboxMessage.of("orders", "forbidden", "2")))
                .isInstanceOf(dev.outbox.MessageRejectedException.class)
                .hasMessageContaining("message 1 (topic 'orders', key 'forbidden')")
                .hasMessageContaining("no tenant");
        assertThat(store.backlog()).as("nothing of the rejected call was written").isZero();

        commit(store, OutboxMessage.builder("orders", "fine").value("3").header("app", "a").build());
        List<OutboxRecord> marked = markAll(store);
        assertThat(marked).hasSize(1);
        assertThat(marked.get(0).message().headers()).extracting(dev.outbox.Header::valueAsString)
                .containsExactly("a", "t2");
    }

    // ---- configuration ------------------------------------------------------------------------------------

    @Test
    void tableAndSchemaNamesAreValidatedAndTheErrorNamesTheBadValue() {
        MySqlStore.Builder builder = MySqlStore.builder(pool);
        for (String bad : List.of("Outbox", "out-box", "outbox; DROP TABLE users", "1outbox", "out box",
                "`outbox`", "outbox\u0000", "outbox`; DROP TABLE x; --")) {
            assertThatThrownBy(() -> builder.table(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("table name '" + bad + "'");
            assertThatThrownBy(() -> builder.schema(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("schema name '" + bad + "'");
        }
        String tooLong = "t".repeat(58);
        assertThatThrownBy(() -> builder.table(tooLong)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(tooLong).hasMessageContaining("57").hasMessageContaining("_parked");
        MySqlStore longest = builder.table("t".repeat(57)).build();
        assertThat(longest.parkedTable()).isEqualTo("`" + "t".repeat(57) + "_parked`");
        longest.createSchema();
        sql("DROP TABLE " + longest.table() + ", " + longest.parkedTable());
        assertThatThrownBy(() -> builder.schema("s".repeat(65))).hasMessageContaining("64");
        assertThatThrownBy(() -> builder.table("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> builder.table(null)).hasMessageContaining("null");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ZERO)).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> builder.statementTimeout(Duration.ofMillis(-5))).hasMessageContaining("-0.005");
        assertThatThrownBy(() -> builder.statementTimeout(null)).hasMessageContaining("statementTimeout");
        assertThatThrownBy(() -> builder.maxKeyLength(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> MySqlStore.builder((DataSource) null)).hasMessageContaining("dataSource");
        assertThatThrownBy(() -> MySqlStore.builder((Jdbi) null)).hasMessageContaining("jdbi");
    }

    @Test
    void defaultsAndQuotedNames() {
        MySqlStore store = MySqlStore.builder(pool).build();
        assertThat(store.table()).isEqualTo("`outbox`");
        assertThat(store.parkedTable()).isEqualTo("`outbox_parked`");
        assertThat(store.statementTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(store.maxKeyLength()).isEqualTo(1024);
        assertThat(store.publisher().insertSql())
                .isEqualTo("INSERT INTO `outbox` (topic, `key`, value, headers) VALUES (?, ?, ?, ?)");
        MySqlStore qualified = MySqlStore.builder(pool).schema("app").table("events").build();
        assertThat(qualified.table()).isEqualTo("`app`.`events`");
        assertThat(qualified.schemaSql()).contains("CREATE TABLE IF NOT EXISTS `app`.`events` (")
                .contains("CREATE TABLE IF NOT EXISTS `app`.`events_parked` (")
                .doesNotContain("${");
        assertThat(MySqlStore.statements(qualified.schemaSql())).hasSize(2)
                .allSatisfy(s -> assertThat(s).startsWith("CREATE TABLE IF NOT EXISTS").doesNotEndWith(";"));
    }

    // ---- schema -------------------------------------------------------------------------------------------

    @Test
    void createSchemaIsIdempotentSafeConcurrentlyAndWorksInAnotherDatabase() throws Exception {
        String otherDatabase = "outbox_app_" + suffix();
        MySqlTestSupport.database(kind(), otherDatabase);
        MySqlStore store = MySqlStore.builder(Jdbi.create(pool)).schema(otherDatabase)
                .table("events_" + tables.incrementAndGet()).build();
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

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(MySqlStoreTests::valueOf)
                .containsExactly("v");
        assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM information_schema.TABLES"
                + " WHERE TABLE_SCHEMA = '" + otherDatabase + "' AND ENGINE = 'InnoDB'")).isEqualTo(2);
        String ddl = showCreateTable(store.table());
        assertThat(ddl).as("create_time must not change when a row is marked").doesNotContainIgnoringCase("ON UPDATE");
        assertThat(ddl).containsIgnoringCase("AUTO_INCREMENT").containsIgnoringCase("utf8mb4");
        assertThat(showCreateTable(store.parkedTable())).doesNotContainIgnoringCase("ON UPDATE");
    }

    private String showCreateTable(String table) throws SQLException {
        try (Connection c = admin.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW CREATE TABLE " + table)) {
            rs.next();
            return rs.getString(2);
        }
    }

    @Test
    void aPlainSqlInsertIsAValidMessage() {
        MySqlStore store = newStore();
        String t = store.table();
        byte[] longValue = new byte[200]; // TO_BASE64 breaks its output into lines of 76 characters
        for (int i = 0; i < longValue.length; i++) {
            longValue[i] = (byte) (i * 7);
        }
        String hex = toHex(longValue);
        sql("INSERT INTO " + t + " (topic, `key`, value) VALUES ('orders', 'order-17', 'hello')");
        sql("INSERT INTO " + t + " (topic, `key`, value, headers) VALUES ('orders', 'order-17', NULL,"
                + " JSON_ARRAY(JSON_OBJECT('name', 'trace', 'value', TO_BASE64('abc')),"
                + " JSON_OBJECT('name', 'flag', 'value', NULL), JSON_OBJECT('name', 'no-value'),"
                + " JSON_OBJECT('name', 'long', 'value', TO_BASE64(X'" + hex + "'))))");
        sql("INSERT INTO " + t + " (topic, `key`, value, headers) VALUES ('orders', 'order-18', X'00FF',"
                + " '[ {\"name\" : \"h\\\\u00e9\", \"value\": \"AQI=\"} ]')");
        sql("INSERT INTO " + t + " (topic, `key`, value, headers) VALUES ('orders', 'order-19', '', '[]')");

        List<OutboxRecord> records = store.mark(UUID.randomUUID(), 10).records();

        assertThat(records).hasSize(4);
        assertThat(records.get(0).message()).isEqualTo(OutboxMessage.of("orders", "order-17", "hello"));
        assertThat(records.get(1).message()).isEqualTo(OutboxMessage.builder("orders", "order-17")
                .header("trace", "abc").header("flag", (byte[]) null).header("no-value", (byte[]) null)
                .header("long", longValue).build());
        assertThat(records.get(1).message().isTombstone()).isTrue();
        assertThat(records.get(2).message()).isEqualTo(OutboxMessage.builder("orders", "order-18")
                .value(new byte[]{0, -1}).header("hé", new byte[]{1, 2}).build());
        assertThat(records.get(3).message().value()).isEmpty();
        assertThat(records.get(3).message().headers()).isEmpty();
    }

    private static String toHex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) {
            out.append(String.format("%02X", b & 0xff));
        }
        return out.toString();
    }

    // ---- bad rows written by hand -------------------------------------------------------------------------

    @Test
    void badRowsWrittenByHandAreRejectedWithAReasonAndDoNotStallOtherKeys() {
        MySqlStore store = builder().maxKeyLength(16).build();
        store.createSchema();
        String insert = "INSERT INTO " + store.table() + " (topic, `key`, value, headers) VALUES ";
        sql(insert + "('orders', 'good-1', 'v1', NULL)");
        sql(insert + "('orders', 'bad-object', 'x', '{\"name\": \"a\"}')");
        sql(insert + "('orders', 'bad-member', 'x', '[{\"name\": \"a\", \"val\": \"AQ==\"}]')");
        sql(insert + "('orders', 'good-2', 'v2', '[]')");
        sql(insert + "('orders', 'bad-base64', 'x', '[{\"name\": \"a\", \"value\": \"not base64!\"}]')");
        sql(insert + "('orders', 'bad-name', 'x', '[{\"name\": 7, \"value\": null}]')");
        sql(insert + "('orders', 'empty-name', 'x', '[{\"name\": \"\"}]')");
        sql(insert + "('orders', 'bad-element', 'x', '[\"a\"]')");
        sql(insert + "('orders', 'key-longer-than-sixteen', 'x', NULL)");
        sql(insert + "('has space', 'bad-topic', 'x', NULL)");
        sql(insert + "('', 'empty-topic', 'x', NULL)");
        sql(insert + "('orders', 'good-3', 'v3', '[{\"name\": \"h\", \"value\": \"AA==\"}]')");

        MarkResult result = store.mark(UUID.randomUUID(), 100);

        assertThat(result.records()).extracting(OutboxRecord::key).containsExactly("good-1", "good-2", "good-3");
        Map<String, String> reasons = new HashMap<>();
        for (MarkResult.Rejected r : result.rejected()) {
            reasons.put(r.key(), r.reason());
        }
        assertThat(result.rejected()).extracting(MarkResult.Rejected::key).containsExactly("bad-object",
                "bad-member", "bad-base64", "bad-name", "empty-name", "bad-element", "key-longer-than-sixteen",
                "bad-topic", "empty-topic");
        assertThat(reasons.get("bad-object")).contains("headers is not a JSON array");
        assertThat(reasons.get("bad-member")).contains("headers[0] has an unknown member 'val'");
        assertThat(reasons.get("bad-base64")).contains("headers[0].value (header 'a') is not valid base64");
        assertThat(reasons.get("bad-name")).contains("headers[0].name is not a string: 7");
        assertThat(reasons.get("empty-name")).contains("headers[0].name is empty");
        assertThat(reasons.get("bad-element")).contains("headers[0] is not a JSON object");
        assertThat(reasons.get("key-longer-than-sixteen")).contains("23 characters").contains("16")
                .contains("key-longer-than-sixteen");
        assertThat(reasons.get("bad-topic")).contains("'has space'");
        assertThat(reasons.get("empty-topic")).contains("topic must not be blank");

        Map<Long, String> park = new HashMap<>();
        for (MarkResult.Rejected r : result.rejected()) {
            park.put(r.id(), "unreadable: " + r.reason());
        }
        store.park(park);
        assertThat(store.parked(100)).extracting(ParkedRecord::key).containsExactly("bad-object",
                "bad-member", "bad-base64", "bad-name", "empty-name", "bad-element", "key-longer-than-sixteen",
                "bad-topic", "empty-topic");
        assertThat(store.parked(100).get(0).reason()).startsWith("unreadable: headers is not a JSON array");
        assertThat(store.backlog()).isEqualTo(3);
    }

    // ---- publisher ----------------------------------------------------------------------------------------

    @Test
    void publisherValidatesBeforeWritingAndNamesTheBadMessage() throws SQLException {
        MySqlStore store = builder().maxKeyLength(8).build();
        store.createSchema();
        MySqlPublisher publisher = store.publisher();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> publisher.publish(c, List.of(OutboxMessage.of("t", "ok", "v"),
                    OutboxMessage.of("t", "much-too-long", "v"))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 1").hasMessageContaining("13 characters")
                    .hasMessageContaining("maxKeyLength 8").hasMessageContaining("much-too-long");
            // 8 characters, 16 UTF-16 units: fits, because the column counts characters
            publisher.publish(c, OutboxMessage.of("t", "🔑🔑🔑🔑🔑🔑🔑🔑", "emoji"));
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.of("t", "a\uD800b", "v")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 0").hasMessageContaining("key").hasMessageContaining("U+D800");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.builder("t", "k").header("x\uDC00", "v")
                    .build())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("header 0 name");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.of("t", "big",
                    new byte[MySqlPublisher.MAX_VALUE_BYTES + 1])))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("16777216 bytes").hasMessageContaining("MEDIUMBLOB");
            assertThatThrownBy(() -> publisher.publish((Connection) null, List.of()))
                    .hasMessageContaining("connection");
            c.commit();
        }
        assertThat(markAll(store)).extracting(OutboxRecord::key).as("only the valid message was written")
                .containsExactly("🔑🔑🔑🔑🔑🔑🔑🔑");
    }

    @Test
    void publisherWritesInTheCallersTransactionOnAConnectionOrAJdbiHandle() throws SQLException {
        MySqlStore store = newStore();
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

        assertThat(store.mark(UUID.randomUUID(), 10).records()).extracting(MySqlStoreTests::valueOf)
                .containsExactly("one", "two", "three", "four");
    }

    @Test
    void aLargeBatchIsSplitIntoSeveralStatementsInListOrder() throws SQLException {
        MySqlStore store = newStore();
        List<OutboxMessage> batch = new ArrayList<>();
        byte[] tenKb = new byte[10_000];
        for (int i = 0; i < 1_300; i++) {
            batch.add(OutboxMessage.builder("t", "k" + (i % 7)).value(i % 100 == 0 ? tenKb : ("v" + i).getBytes(
                    StandardCharsets.UTF_8)).header("i", String.valueOf(i)).build());
        }
        batch.add(3, OutboxMessage.of("t", "huge", new byte[5 * 1024 * 1024])); // alone in its statement
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, batch);
            c.commit();
        }

        List<OutboxRecord> records = markAll(store);

        assertThat(records).extracting(OutboxRecord::message).containsExactlyElementsOf(batch);
        for (int i = 1; i < records.size(); i++) {
            assertThat(records.get(i).id()).isGreaterThan(records.get(i - 1).id());
        }
    }

    @Test
    void publisherReportsADatabaseFailureAsAStoreException() throws SQLException {
        MySqlStore store = builder().build(); // no createSchema: the table is missing
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> store.publisher().publish(c, OutboxMessage.of("t", "k", "v")))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isFalse())
                    .hasMessageContaining("1146").hasMessageContaining(store.table());
        }
    }

    // ---- failures, timeouts -------------------------------------------------------------------------------

    @Test
    void aMissingTableIsAnErrorThatIsNotRetriable() {
        MySqlStore store = builder().build();

        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                .isInstanceOfSatisfying(StoreException.class, e -> {
                    assertThat(e.isRetriable()).isFalse();
                    assertThat(e.getCause()).isInstanceOf(Exception.class);
                })
                .hasMessageContaining("1146").hasMessageContaining("marking up to 10 rows of " + store.table());
        assertThatThrownBy(() -> store.purge(List.of(1L))).isInstanceOf(StoreException.class);
        assertThatThrownBy(store::backlog).isInstanceOf(StoreException.class);
        assertThatThrownBy(() -> store.parked(1)).isInstanceOf(StoreException.class);
    }

    @Test
    void aStatementThatExceedsTheTimeoutFailsRetriablyInsteadOfHanging() throws Exception {
        MySqlStore store = builder().statementTimeout(Duration.ofMillis(500)).build();
        store.createSchema();
        commit(store, OutboxMessage.of("t", "k", "v"));
        try (Connection locker = admin.getConnection()) {
            locker.setAutoCommit(false);
            locker.createStatement().execute("SELECT id FROM " + store.table() + " FOR UPDATE");
            long started = System.nanoTime();

            assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10))
                    .isInstanceOfSatisfying(StoreException.class, e -> assertThat(e.isRetriable()).isTrue())
                    .hasMessageContaining("marking");
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
        MySqlStore store = newStore();
        assertThatThrownBy(() -> store.purge(null)).hasMessageContaining("ids");
        assertThatThrownBy(() -> store.purge(Arrays.asList(1L, null))).hasMessageContaining("position 1");
        assertThatThrownBy(() -> store.reset(null, List.of(1L))).hasMessageContaining("leaderId");
        assertThatThrownBy(() -> store.mark(new UUID(0, 0), 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nil UUID").hasMessageContaining("00000000-0000-0000-0000-000000000000");
        assertThatThrownBy(() -> store.park(null)).hasMessageContaining("reasons");
        Map<Long, String> nullId = new HashMap<>();
        nullId.put(null, "x");
        assertThatThrownBy(() -> store.park(nullId)).hasMessageContaining("null id");
        assertThatThrownBy(() -> store.parked(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> store.replay(null)).hasMessageContaining("ids");
    }

    // ---- batches larger than one statement -----------------------------------------------------------------

    @Test
    void idBatchesLargerThanOneStatementAreHandledInOneTransaction() throws SQLException {
        MySqlStore store = newStore();
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < 2_500; i++) {
            batch.add(OutboxMessage.of("t", "k" + (i % 13), "v" + i));
        }
        try (Connection c = pool.getConnection()) {
            store.publisher().publish(c, batch);
        }
        UUID leader = UUID.randomUUID();

        List<OutboxRecord> marked = store.mark(leader, 2_500).records();
        assertThat(marked).hasSize(2_500);
        List<Long> ids = marked.stream().map(OutboxRecord::id).toList();
        store.reset(leader, ids);
        List<OutboxRecord> again = store.mark(leader, 2_500).records();
        assertThat(again).extracting(OutboxRecord::attempts).containsOnly(1).hasSize(2_500);

        Map<Long, String> reasons = new HashMap<>();
        for (int i = 0; i < 1_200; i++) {
            reasons.put(ids.get(i), "reason " + i);
        }
        store.park(reasons);
        assertThat(store.backlog()).isEqualTo(1_300);
        assertThat(store.parked(2_000)).hasSize(1_200).extracting(ParkedRecord::attempts).containsOnly(1);
        assertThat(store.parked(2_000).get(1_199).reason()).isEqualTo("reason 1199");

        assertThat(store.replay(ids.subList(0, 1_100))).isEqualTo(1_100);
        assertThat(store.parked(2_000)).hasSize(100);
        store.purge(ids);
        List<OutboxRecord> rest = markAll(store);
        assertThat(rest).as("only the replayed rows, with new ids, in their old order").hasSize(1_100)
                .extracting(MySqlStoreTests::valueOf).containsExactlyElementsOf(
                        batch.subList(0, 1_100).stream().map(m -> new String(m.value(), StandardCharsets.UTF_8))
                                .toList());
    }

    // ---- time zones and connection state ------------------------------------------------------------------

    @Test
    void timestampsAreExactWhateverTheSessionAndDriverTimeZones() throws SQLException {
        String zonedUrl = url + (url.contains("?") ? "&" : "?")
                + "connectionTimeZone=%2B09:30&forceConnectionTimeZoneToSession=true"; // time zone tables may be empty
        try (HikariDataSource zoned = MySqlTestSupport.pool(kind(), zonedUrl, "store_test_tz", 2)) {
            MySqlStore store = MySqlStore.builder(zoned).table("t_" + tables.incrementAndGet()).build();
            store.createSchema();
            assertThat(MySqlTestSupport.queryString(zoned, "SELECT @@session.time_zone"))
                    .isEqualTo("+09:30");
            Instant before = Instant.now();
            try (Connection c = zoned.getConnection()) {
                store.publisher().publish(c, OutboxMessage.of("t", "k", "v"));
            }
            sql("INSERT INTO " + store.table() + " (topic, `key`, value) VALUES ('t', 'k', 'by hand')");
            List<OutboxRecord> records = store.mark(UUID.randomUUID(), 10).records();
            store.park(Map.of(records.get(0).id(), "parked"));
            Instant after = Instant.now();

            Duration slack = Duration.ofSeconds(5);
            assertThat(records).hasSize(2).allSatisfy(r ->
                    assertThat(r.createdAt()).isBetween(before.minus(slack), after.plus(slack)));
            assertThat(store.parked(10).get(0).parkedAt()).isBetween(before.minus(slack), after.plus(slack));
        }
    }

    @Test
    void pooledConnectionsAreHandedBackAsTheStoreFoundThem() throws SQLException {
        String isolationVariable = kind() == JdbcServer.Kind.MYSQL ? "@@session.transaction_isolation"
                : "@@session.tx_isolation";
        try (HikariDataSource single = MySqlTestSupport.pool(kind(), url, "store_test_single", 1)) {
            MySqlStore store = MySqlStore.builder(single).table("t_" + tables.incrementAndGet()).build();
            store.createSchema();
            String isolation = MySqlTestSupport.queryString(single, "SELECT " + isolationVariable);
            try (Connection c = single.getConnection()) {
                store.publisher().publish(c, List.of(OutboxMessage.of("t", "a", "1"), OutboxMessage.of("t", "b", "2")));
            }
            UUID leader = UUID.randomUUID();
            List<OutboxRecord> marked = store.mark(leader, 10).records();
            store.reset(leader, List.of(marked.get(0).id()));
            store.park(Map.of(marked.get(0).id(), "x"));
            store.replay(List.of(marked.get(0).id()));
            store.purge(List.of(marked.get(1).id()));
            assertThat(store.backlog()).isEqualTo(1);

            try (Connection c = single.getConnection()) {
                assertThat(c.getAutoCommit()).isTrue();
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT " + isolationVariable
                        + ", @@session.autocommit, @@session.innodb_lock_wait_timeout")) {
                    rs.next();
                    assertThat(rs.getString(1)).as("the session's isolation level").isEqualTo(isolation)
                            .isEqualTo("REPEATABLE-READ");
                    assertThat(rs.getInt(2)).isEqualTo(1);
                }
            }
        }
    }

    @Test
    void worksOnAPoolWhoseConnectionsAreNotInAutoCommitMode() throws SQLException {
        try (HikariDataSource manual = MySqlTestSupport.pool(kind(), url, "store_test_manual", 2,
                config -> config.setAutoCommit(false))) {
            MySqlStore store = MySqlStore.builder(manual).table("t_" + tables.incrementAndGet()).build();
            store.createSchema();
            try (Connection c = manual.getConnection()) {
                store.publisher().publish(c, List.of(OutboxMessage.of("t", "a", "1"), OutboxMessage.of("t", "b", "2")));
                c.commit();
            }
            UUID leader = UUID.randomUUID();
            List<OutboxRecord> marked = store.mark(leader, 10).records();
            assertThat(marked).hasSize(2);
            store.purge(List.of(marked.get(0).id()));

            assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.table()))
                    .as("the purge committed").isEqualTo(1);
            assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.table()
                    + " WHERE leader_id <> " + MySqlStore.UNMARKED)).as("the mark committed").isEqualTo(1);
        }
    }

    // ---- backlog ------------------------------------------------------------------------------------------

    @Test
    void backlogIsExactForSmallTablesAndAnUpperBoundAboveTheLimit() {
        MySqlStore store = newStore();
        String digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
                + " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)";
        String rows = " SELECT 't', CONCAT('k', a.d), 'v' FROM " + digits + " a, " + digits + " b, " + digits + " c, "
                + digits + " d, " + digits + " e";
        String insert = "INSERT INTO " + store.table() + " (topic, `key`, value)";
        sql(insert + rows + " LIMIT 99999");
        assertThat(store.backlog()).isEqualTo(99_999);
        sql(insert + rows + " LIMIT 2");
        // INSERT ... SELECT may leave gaps in the ids (InnoDB reserves auto-increment values in blocks for it).
        String span = "SELECT MAX(id) - MIN(id) + 1 FROM " + store.table();
        String count = "SELECT COUNT(*) FROM " + store.table();
        assertThat(store.backlog()).as("the span of ids past the limit")
                .isEqualTo(MySqlTestSupport.queryLong(admin, span)).isGreaterThanOrEqualTo(100_001);
        sql("DELETE FROM " + store.table() + " WHERE id % 10 = 0");
        assertThat(MySqlTestSupport.queryLong(admin, count)).isLessThanOrEqualTo(MySqlStore.EXACT_BACKLOG_LIMIT);
        assertThat(store.backlog()).as("exact again").isEqualTo(MySqlTestSupport.queryLong(admin, count));
        sql(insert + rows + " LIMIT 50000");

        long rowCount = MySqlTestSupport.queryLong(admin, count);
        assertThat(rowCount).isGreaterThan(MySqlStore.EXACT_BACKLOG_LIMIT);
        assertThat(store.backlog()).as("an upper bound: the span of ids")
                .isEqualTo(MySqlTestSupport.queryLong(admin, span)).isGreaterThanOrEqualTo(rowCount);
    }
}
