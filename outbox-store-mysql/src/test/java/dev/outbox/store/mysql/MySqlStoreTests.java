package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.store.sql.SqlStoreTests;
import dev.outbox.testservers.JdbcServer;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.function.BiConsumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the MySQL store does beyond the contract: configuration, schema, rows written by hand, the publisher,
 * timeouts, errors, large id batches, time zones, and leaving pooled connections as it found them. Run for MySQL 8
 * and MariaDB by the subclasses.
 */
abstract class MySqlStoreTests extends SqlStoreTests<MySqlStore, MySqlStore.Builder> {
    private String url;

    MySqlStoreTests() {
        // The driver cancels a statement after its query timeout, in whole seconds; the message names the call.
        super(new Database<>(MySqlDialect.DIALECT, '`', MySqlStore::builder, "error 1146",
                Duration.ofMillis(500), "marking up to 10 rows"));
    }

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

    @Test
    void theNilUuidIsNoLeaderId() {
        MySqlStore store = newStore();
        assertThatThrownBy(() -> store.mark(new UUID(0, 0), 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("nil UUID").hasMessageContaining("00000000-0000-0000-0000-000000000000");
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

    // ---- configuration ------------------------------------------------------------------------------------
    @Test
    void aJdbiIsAnEntryPointAndTheSchemaSplitsIntoStatements() {
        assertThatThrownBy(() -> MySqlStore.builder((Jdbi) null)).hasMessageContaining("jdbi");
        MySqlStore store = MySqlStore.builder(Jdbi.create(pool)).schema("app").table("events").build();
        assertThat(store.publisher().insertSql())
                .isEqualTo("INSERT INTO `app`.`events` (topic, `key`, value, headers, message_id)"
                        + " VALUES (?, ?, ?, ?, ?)");
        assertThat(MySqlSchema.statements(store.schemaSql())).hasSize(3) // the outbox, parked and leader tables
                .allSatisfy(s -> assertThat(s).startsWith("CREATE TABLE IF NOT EXISTS").doesNotEndWith(";"));
    }


    // ---- schema -------------------------------------------------------------------------------------------
    @Test
    void createSchemaWorksInAnotherDatabase() throws SQLException {
        String otherDatabase = "outbox_app_" + suffix();
        MySqlTestSupport.database(kind(), otherDatabase);
        MySqlStore store = builder().schema(otherDatabase).build();
        store.createSchema();
        assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM information_schema.TABLES"
                + " WHERE TABLE_SCHEMA = '" + otherDatabase + "' AND ENGINE = 'InnoDB'"))
                .as("the outbox, parked and leader tables").isEqualTo(3);
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
    @Test
    void badHeadersWrittenByHandAreRejectedWithAReasonAndDoNotStallOtherKeys() {
        MySqlStore store = newStore();
        BiConsumer<String, String> row = (key, headers) -> sql("INSERT INTO " + store.table()
                + " (topic, `key`, value, headers) VALUES ('orders', '" + key + "', 'x', " + headers + ")");
        row.accept("good-1", "NULL");
        row.accept("bad-object", "'{\"name\": \"a\"}'");
        row.accept("bad-member", "'[{\"name\": \"a\", \"val\": \"AQ==\"}]'");
        row.accept("good-2", "'[]'");
        row.accept("bad-base64", "'[{\"name\": \"a\", \"value\": \"not base64!\"}]'");
        row.accept("bad-name", "'[{\"name\": 7, \"value\": null}]'");
        row.accept("empty-name", "'[{\"name\": \"\"}]'");
        row.accept("bad-element", "'[\"a\"]'");
        row.accept("good-3", "'[{\"name\": \"h\", \"value\": \"AA==\"}]'");

        Map<String, String> bad = new LinkedHashMap<>();
        for (String[] reason : new String[][]{{"bad-object", "headers is not a JSON array"},
                {"bad-member", "headers[0] has an unknown member 'val'"},
                {"bad-base64", "headers[0].value (header 'a') is not valid base64"},
                {"bad-name", "headers[0].name is not a string: 7"}, {"empty-name", "headers[0].name is empty"},
                {"bad-element", "headers[0] is not a JSON object"}}) {
            bad.put(reason[0], reason[1]);
        }
        markAndParkTheRejected(store, List.of("good-1", "good-2", "good-3"), bad);
    }



    // ---- publisher ----------------------------------------------------------------------------------------
    @Test
    void publisherRejectsWhatUtf8mb4AndMediumblobCannotHold() throws SQLException {
        MySqlStore store = newStore();
        MySqlPublisher publisher = store.publisher();
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.of("t", "a\uD800b", "v")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("message 0").hasMessageContaining("key").hasMessageContaining("U+D800");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.builder("t", "k").header("x\uDC00", "v")
                    .build())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("header 0 name");
            assertThatThrownBy(() -> publisher.publish(c, OutboxMessage.of("t", "big",
                    new byte[MySqlPublisher.MAX_VALUE_BYTES + 1])))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("16777216 bytes").hasMessageContaining("MEDIUMBLOB");
        }
        assertThat(store.backlog()).as("nothing was written").isZero();
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

    // ---- failures, timeouts -------------------------------------------------------------------------------

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
        // The 1,300 rows left in the outbox are of the replayed keys: the replay moved them behind the replayed rows
        // (Store.replay, held keys), so the purge of their old ids found nothing.
        List<OutboxRecord> rest = markAll(store);
        List<OutboxMessage> expected = new ArrayList<>(batch.subList(0, 1_100));
        expected.addAll(batch.subList(1_200, 2_500));
        assertThat(rest).as("the replayed rows, then the rows moved behind them, each in their old order")
                .hasSize(2_400).extracting(MySqlStoreTests::valueOf).containsExactlyElementsOf(
                        expected.stream().map(m -> new String(m.value(), StandardCharsets.UTF_8)).toList());
        assertThat(rest.get(1_100).id()).isGreaterThan(rest.get(1_099).id());
    }

    // ---- time zones and connection state ------------------------------------------------------------------

    @Test
    void timestampsAreExactWhateverTheSessionAndDriverTimeZones() throws SQLException {
        String zonedUrl = url + (url.contains("?") ? "&" : "?")
                + "connectionTimeZone=%2B09:30&forceConnectionTimeZoneToSession=true"; // time zone tables may be empty
        try (HikariDataSource zoned = MySqlTestSupport.pool(kind(), zonedUrl, "store_test_tz", 2)) {
            MySqlStore store = MySqlStore.builder(zoned).table(newTableName()).build();
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
            MySqlStore store = MySqlStore.builder(single).table(newTableName()).build();
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
            MySqlStore store = MySqlStore.builder(manual).table(newTableName()).build();
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
