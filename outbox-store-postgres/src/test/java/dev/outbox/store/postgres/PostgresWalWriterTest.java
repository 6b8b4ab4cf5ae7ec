package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Header;
import dev.outbox.MessageDecorator;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.MessageDecorators;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.spi.StoreException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The WAL harvest's writer side on a real Postgres with {@code wal_level=logical}: the SQL encoding function gives
 * the bytes {@link WalCodec} gives, and what the publisher (or a plain-SQL writer) emits is what a {@code pgoutput}
 * slot streams: the committed messages, in order, with the outbox's prefix.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresWalWriterTest {
    private static final String PUBLICATION = "wal_writer_test";
    private static final int MAX_KEY_LENGTH = 100;

    private final SqlTableNames names = PostgresDialect.DIALECT.tableNames().names(null, "outbox");
    private final String prefix = WalSql.prefix(names);
    private DataSource admin;
    private HikariDataSource pool;
    private int slots;

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_wal_writer_test");
        admin = PostgresTestSupport.admin(url);
        pool = PostgresTestSupport.pool(url, "wal_writer_test", 4);
        PostgresStore store = PostgresStore.builder(pool).build();
        store.createSchema();
        PostgresTestSupport.execute(admin, WalSql.render(names, prefix));
        PostgresTestSupport.execute(admin, WalSql.render(names, prefix)); // idempotent
        LogicalSlot.createPublication(admin, PUBLICATION);
    }

    @AfterAll
    void dropSlotsAndClose() {
        // Each test drops its own; this catches one left by a failure in a slot's constructor or close.
        PostgresTestSupport.execute(admin, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE database = current_database()");
        pool.close();
    }

    // ---- names and DDL ------------------------------------------------------------------------------------
    @Test
    void thePrefixAndFunctionsAreNamedAfterTheTable() {
        SqlTableNames inSchema = PostgresDialect.DIALECT.tableNames().names("app", "events");
        assertThat(WalSql.prefix(names)).isEqualTo("dev.outbox:outbox");
        assertThat(WalSql.prefix(inSchema)).isEqualTo("dev.outbox:app.events");
        assertThat(WalSql.encodeFunction(inSchema)).isEqualTo("\"app\".\"events_wal_encode\"");
        assertThat(WalSql.emitFunction(names)).isEqualTo("\"outbox_emit\"");
        assertThat(WalSql.render(inSchema, WalSql.prefix(inSchema)))
                .contains("CREATE OR REPLACE FUNCTION \"app\".\"events_wal_encode\"(topic text,")
                .contains("CREATE OR REPLACE FUNCTION \"app\".\"events_emit\"(topic text,")
                .contains("message_id uuid DEFAULT \"app\".\"outbox_uuidv7\"()")
                .contains("pg_logical_emit_message(true, 'dev.outbox:app.events',")
                .doesNotContain("${");
    }

    @Test
    void aNameTooLongForTheFunctionsOrABadPrefixIsRefused() {
        String longest = "t".repeat(WalSql.MAX_TABLE_LENGTH);
        assertThat(WalSql.render(PostgresDialect.DIALECT.tableNames().names(null, longest), "p"))
                .contains(longest + "_wal_encode");
        SqlTableNames tooLong = PostgresDialect.DIALECT.tableNames().names(null, longest + "t");
        assertThatThrownBy(() -> WalSql.render(tooLong, "p")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("table name '" + longest + "t' is 53 characters, longer than 52, the longest the WAL"
                        + " harvest takes (its function '" + longest + "t_wal_encode' must fit Postgres' limit of 63)");
        assertThatThrownBy(() -> WalSql.render(names, "it's")).hasMessageContaining("prefix 'it's'");
        assertThatThrownBy(() -> WalSql.render(names, "")).hasMessageContaining("prefix ''");
    }

    @Test
    void theFunctionsWorkInASchemaAndEmitWithItsPrefix() {
        PostgresTestSupport.execute(admin, "CREATE SCHEMA IF NOT EXISTS app");
        PostgresStore.builder(pool).schema("app").table("events").build().createSchema();
        SqlTableNames inSchema = PostgresDialect.DIALECT.tableNames().names("app", "events");
        PostgresTestSupport.execute(admin, WalSql.render(inSchema, WalSql.prefix(inSchema)));

        try (LogicalSlot slot = slot()) {
            PostgresTestSupport.execute(admin, "SELECT app.events_emit('orders', 'k', '\\x0102'::bytea)");
            List<LogicalSlot.Message> emitted = slot.take("dev.outbox:app.events");
            assertThat(emitted).hasSize(1);
            assertThat(decode(emitted.get(0)).message()).isEqualTo(OutboxMessage.of("orders", "k", new byte[]{1, 2}));
            assertThat(slot.take(prefix)).isEmpty();
        }
    }

    // ---- the SQL encoding ---------------------------------------------------------------------------------
    @Test
    void theSqlEncodingIsByteIdenticalToJava() throws SQLException {
        try (Connection connection = pool.getConnection();
             PreparedStatement statement = connection.prepareStatement("SELECT outbox_wal_encode(?, ?, ?, ?, ?, ?)")) {
            for (Map.Entry<String, OutboxMessage> entry : WalTestMessages.all().entrySet()) {
                UUID id = MessageIds.next();
                bind(connection, statement, entry.getValue(), id);
                assertThat(one(statement)).as(entry.getKey()).isEqualTo(WalCodec.encode(entry.getValue(), id));
            }
        }
    }

    @Test
    void theSqlEncodingDefaultsToNoHeadersAndAFreshTimeOrderedId() throws SQLException {
        byte[] content = bytes("SELECT outbox_wal_encode('orders', 'k', NULL)");
        WalCodec.Decoded decoded = WalCodec.decode(content, MAX_KEY_LENGTH);

        assertThat(decoded.message()).isEqualTo(OutboxMessage.tombstone("orders", "k"));
        assertThat(decoded.messageId().version()).isEqualTo(7);
        assertThat(Math.abs(MessageIds.unixMillis(decoded.messageId()) - System.currentTimeMillis()))
                .isLessThan(60_000);
    }

    @Test
    void theSqlEncodingNamesBadArguments() {
        assertThat(sqlError("SELECT outbox_wal_encode(NULL, 'k', NULL)")).contains("topic must not be NULL");
        assertThat(sqlError("SELECT outbox_wal_encode('t', NULL, NULL)")).contains("key must not be NULL (topic t)");
        assertThat(sqlError("SELECT outbox_wal_encode('t', 'k', NULL, ARRAY['a', 'b'], ARRAY['x'::bytea])"))
                .contains("header_names has 2 elements but header_values has 1");
        assertThat(sqlError("SELECT outbox_wal_encode('t', 'k', NULL, ARRAY['a', ''], ARRAY['x'::bytea, NULL])"))
                .contains("header_names[2] is NULL or empty");
        assertThat(sqlError("SELECT outbox_wal_encode('t', 'k', NULL, ARRAY[NULL, 'a'], ARRAY['x'::bytea, NULL])"))
                .contains("header_names[1] is NULL or empty");
        assertThat(sqlError("SELECT outbox_wal_encode('t', 'k', NULL, NULL, NULL)"))
                .contains("header_names and header_values must not be NULL");
        assertThat(sqlError("SELECT outbox_wal_encode('t', 'k', NULL, ARRAY[['a'], ['b']], ARRAY[['x'::bytea],"
                + " ['y'::bytea]])")).contains("must be one-dimensional");
        assertThat(sqlError("SELECT outbox_emit('t', NULL, NULL)")).contains("key must not be NULL")
                .contains("SQLSTATE 22023");
    }

    @Test
    void parkedRowsAreEncodedAndReEmittedWithPlainSqlInIdOrder() throws SQLException {
        List<OutboxMessage> messages = new ArrayList<>(WalTestMessages.all().values());
        List<UUID> ids = new ArrayList<>();
        // Inserted in reverse id order, so that the table's physical order is not the id order.
        try (Connection connection = pool.getConnection();
             PreparedStatement insert = connection.prepareStatement("INSERT INTO " + names.parked()
                     + " (id, create_time, topic, key, value, header_names, header_values, attempts, reason, message_id)"
                     + " VALUES (?, now(), ?, ?, ?, ?, ?, 3, 'broker said no', ?)")) {
            for (int i = 0; i < messages.size(); i++) {
                ids.add(i == 1 ? null : MessageIds.next()); // a row parked before message ids has none
            }
            for (int i = messages.size() - 1; i >= 0; i--) {
                OutboxMessage message = messages.get(i);
                insert.setLong(1, 1000 + i);
                insert.setString(2, message.topic());
                insert.setString(3, message.key());
                insert.setBytes(4, message.value());
                insert.setArray(5, connection.createArrayOf("text", headerNames(message)));
                insert.setArray(6, connection.createArrayOf("bytea", headerValues(message)));
                insert.setObject(7, ids.get(i));
                insert.executeUpdate();
            }
        }

        List<byte[]> encoded = column("SELECT outbox_wal_encode(topic, key, value, header_names, header_values,"
                + " message_id) FROM " + names.parked() + " ORDER BY id");
        assertThat(encoded).hasSize(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            WalCodec.Decoded decoded = WalCodec.decode(encoded.get(i), MAX_KEY_LENGTH);
            assertThat(decoded.message()).isEqualTo(messages.get(i));
            if (ids.get(i) == null) {
                assertThat(decoded.messageId().version()).as("a fresh id for a row without one").isEqualTo(7);
            } else {
                assertThat(encoded.get(i)).isEqualTo(WalCodec.encode(messages.get(i), ids.get(i)));
            }
        }

        try (LogicalSlot slot = slot()) {
            PostgresTestSupport.execute(admin, "SELECT outbox_emit(topic, key, value, header_names, header_values,"
                    + " message_id) FROM " + names.parked() + " ORDER BY id");
            List<LogicalSlot.Message> emitted = slot.take(prefix);
            assertThat(emitted).hasSize(messages.size());
            for (int i = 0; i < messages.size(); i++) {
                WalCodec.Decoded decoded = decode(emitted.get(i));
                assertThat(decoded.message()).as("message %d in id order", i).isEqualTo(messages.get(i));
                if (ids.get(i) != null) {
                    assertThat(decoded.messageId()).isEqualTo(ids.get(i));
                }
            }
        } finally {
            PostgresTestSupport.execute(admin, "DELETE FROM " + names.parked());
        }
    }

    // ---- the publisher in WAL mode ------------------------------------------------------------------------
    @Test
    void publishedMessagesAreStreamedInListOrderAsTheyWereDecorated() throws SQLException {
        MessageDecorator tenant = m -> m.withHeader(Header.of("tenant", "acme"));
        MessageDecorator version = m -> m.withHeaderReplaced("schema", "v2");
        PostgresPublisher publisher = walPublisher(MessageDecorators.of(List.of(tenant, version)));
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            // Keys and values that do not sort in list order, so that no other order passes by accident.
            batch.add(OutboxMessage.builder("orders", "key-" + (i * 7919 % 500)).value("value " + (499 - i))
                    .header("schema", "v1").build());
        }
        OutboxMessage single = OutboxMessage.of("orders", "single", "alone");

        try (LogicalSlot slot = slot()) {
            inTransaction(connection -> {
                publisher.publish(connection, single);
                publisher.publish(connection, batch);
                publisher.publish(connection, List.of(WalTestMessages.all().get("1000 headers"),
                        WalTestMessages.all().get("unicode")));
            }, true);

            List<LogicalSlot.Message> emitted = slot.take(prefix);
            List<OutboxMessage> expected = new ArrayList<>();
            expected.add(single);
            expected.addAll(batch);
            expected.add(WalTestMessages.all().get("1000 headers"));
            expected.add(WalTestMessages.all().get("unicode"));
            assertThat(emitted).hasSize(expected.size());
            UUID previous = null;
            for (int i = 0; i < expected.size(); i++) {
                assertThat(emitted.get(i).transactional()).isTrue();
                WalCodec.Decoded decoded = decode(emitted.get(i));
                assertThat(decoded.message()).as("message %d", i)
                        .isEqualTo(version.decorate(tenant.decorate(expected.get(i))));
                assertThat(decoded.messageId().version()).isEqualTo(7);
                if (previous != null) {
                    assertThat(decoded.messageId()).as("ids follow the list").isGreaterThan(previous);
                }
                previous = decoded.messageId();
            }
        }
    }

    @Test
    void onlyCommittedMessagesAreStreamedInCommitOrder() throws SQLException {
        PostgresPublisher publisher = walPublisher(MessageDecorators.none());
        try (LogicalSlot slot = slot();
             Connection first = pool.getConnection();
             Connection second = pool.getConnection()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            publisher.publish(first, OutboxMessage.of("orders", "k", "first emitted, committed last"));
            publisher.publish(second, OutboxMessage.of("orders", "k", "second emitted, committed first"));
            second.commit();
            first.commit();

            inTransaction(connection -> publisher.publish(connection, List.of(
                    OutboxMessage.of("orders", "k", "rolled back 1"), OutboxMessage.of("orders", "k", "rolled back 2"))),
                    false);
            inTransaction(connection -> {
                publisher.publish(connection, OutboxMessage.of("orders", "k", "kept"));
                try (var statement = connection.createStatement()) {
                    statement.execute("SAVEPOINT s");
                    publisher.publish(connection, OutboxMessage.of("orders", "k", "rolled back to the savepoint"));
                    statement.execute("ROLLBACK TO SAVEPOINT s");
                }
                publisher.publish(connection, OutboxMessage.of("orders", "k", "kept too"));
            }, true);

            assertThat(slot.take(prefix)).extracting(m -> new String(decode(m).message().value(), StandardCharsets.UTF_8))
                    .containsExactly("second emitted, committed first", "first emitted, committed last", "kept",
                            "kept too");
        }
    }

    @Test
    void theWalModeStatementTakesTheTableModeParameters() throws SQLException {
        PostgresPublisher publisher = walPublisher(MessageDecorators.none());
        assertThat(publisher.insertSql()).isEqualTo("SELECT \"outbox_emit\"(?, ?, ?, ?, ?, ?)");
        OutboxMessage message = WalTestMessages.all().get("null and repeated header values");
        UUID id = MessageIds.next();

        try (LogicalSlot slot = slot()) {
            try (Connection connection = pool.getConnection();
                 PreparedStatement statement = connection.prepareStatement(publisher.insertSql())) {
                bind(connection, statement, message, id);
                statement.executeQuery().close();
                bind(connection, statement, message, null);
                statement.executeQuery().close();
            }
            List<LogicalSlot.Message> emitted = slot.take(prefix);
            assertThat(emitted).hasSize(2);
            assertThat(emitted.get(0).content()).isEqualTo(WalCodec.encode(message, id));
            assertThat(decode(emitted.get(1)).message()).isEqualTo(message);
            assertThat(decode(emitted.get(1)).messageId().version()).as("a NULL id gets a fresh one").isEqualTo(7);
        }
    }

    @Test
    void badArgumentsFailAsInTableModeAndEmitNothing() throws SQLException {
        PostgresPublisher table = new PostgresPublisher(names, 5, 30, rejectTopic("forbidden"));
        PostgresPublisher wal = walPublisher(rejectTopic("forbidden"), 5);
        OutboxMessage good = OutboxMessage.of("orders", "k", "v");
        List<List<OutboxMessage>> bad = List.of(
                Arrays.asList(good, null),
                List.of(good, OutboxMessage.of("orders", "123456", "v")),
                List.of(OutboxMessage.of("orders", "a\u0000", "v")),
                List.of(OutboxMessage.builder("orders", "k").header("n\u0000", "v").build()),
                List.of(good, OutboxMessage.of("forbidden", "k", "v")));

        try (LogicalSlot slot = slot()) {
            for (List<OutboxMessage> messages : bad) {
                inTransaction(connection -> {
                    Throwable expected = catchThrowable(() -> table.publish(connection, messages));
                    assertThat(expected).as("table mode refuses %s", messages).isNotNull();
                    assertThatThrownBy(() -> wal.publish(connection, messages)).as("%s", messages)
                            .isInstanceOf(expected.getClass()).hasMessage(expected.getMessage());
                }, true);
            }
            inTransaction(connection -> assertThatThrownBy(() -> wal.publish(connection,
                    List.of(good, OutboxMessage.of("orders", "\uD800", "v"))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("message 1 (topic 'orders'): key '\uD800' contains an unpaired surrogate at index 0,"
                            + " which UTF-8 cannot encode"), true);
            assertThatThrownBy(() -> wal.publish((Connection) null, good)).hasMessageContaining("connection");
            inTransaction(connection -> assertThatThrownBy(() -> wal.publish(connection, (List<OutboxMessage>) null))
                    .hasMessageContaining("messages"), true);
            inTransaction(connection -> wal.publish(connection, List.of()), true);

            assertThat(slot.take(prefix)).as("nothing was emitted").isEmpty();
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM " + names.outbox())).isZero();
        }
    }

    @Test
    void aDatabaseFailureIsTranslatedAndNamesTheWrite() throws SQLException {
        PostgresPublisher publisher = walPublisher(MessageDecorators.none());
        try (Connection connection = admin.getConnection()) {
            try (var statement = connection.createStatement()) {
                statement.execute("SELECT pg_terminate_backend(pg_backend_pid())");
            } catch (SQLException expected) {
                // the connection killed itself
            }
            assertThatThrownBy(() -> publisher.publish(connection, OutboxMessage.of("orders", "k", "v")))
                    .isInstanceOf(StoreException.class)
                    .hasMessageStartingWith("emitting 1 message(s) of \"outbox\" to the write-ahead log (prefix"
                            + " dev.outbox:outbox) failed")
                    .matches(e -> ((StoreException) e).isRetriable(), "retriable");
        }
    }

    @Test
    void aBatchIsCutIntoChunksOnlyWhenItIsLarge() {
        byte[][] contents = {new byte[10], new byte[20], new byte[30], new byte[100], new byte[5]};
        assertThat(PostgresPublisher.chunkEnd(contents, 0, 1000)).isEqualTo(5);
        assertThat(PostgresPublisher.chunkEnd(contents, 0, 60)).isEqualTo(3);
        assertThat(PostgresPublisher.chunkEnd(contents, 0, 59)).isEqualTo(2);
        assertThat(PostgresPublisher.chunkEnd(contents, 3, 60)).as("at least one, however large").isEqualTo(4);
        assertThat(PostgresPublisher.chunkEnd(contents, 4, 60)).isEqualTo(5);
    }

    // ---- helpers ------------------------------------------------------------------------------------------
    private LogicalSlot slot() {
        return new LogicalSlot(admin, "wal_writer_test_" + (++slots), PUBLICATION);
    }

    private PostgresPublisher walPublisher(MessageDecorators decorators) {
        return walPublisher(decorators, MAX_KEY_LENGTH);
    }

    private PostgresPublisher walPublisher(MessageDecorators decorators, int maxKeyLength) {
        return new PostgresPublisher(names, maxKeyLength, 30, decorators, prefix, null);
    }

    private static MessageDecorators rejectTopic(String topic) {
        return MessageDecorators.of(List.of(m -> {
            if (m.topic().equals(topic)) {
                throw new IllegalStateException("no messages to " + topic);
            }
            return m;
        }));
    }

    private static WalCodec.Decoded decode(LogicalSlot.Message message) {
        WalCodec.Decoded decoded = WalCodec.decode(message.content(), MAX_KEY_LENGTH);
        assertThat(decoded.error()).isNull();
        return decoded;
    }

    private interface Work {
        void run(Connection connection) throws SQLException;
    }

    private void inTransaction(Work work, boolean commit) throws SQLException {
        try (Connection connection = pool.getConnection()) {
            connection.setAutoCommit(false);
            try {
                work.run(connection);
            } finally {
                if (commit) {
                    connection.commit();
                } else {
                    connection.rollback();
                }
                connection.setAutoCommit(true);
            }
        }
    }

    /** Binds the six columns in the table publisher's order. */
    private static void bind(Connection connection, PreparedStatement statement, OutboxMessage message, UUID id)
            throws SQLException {
        statement.setString(1, message.topic());
        statement.setString(2, message.key());
        statement.setBytes(3, message.value());
        statement.setArray(4, connection.createArrayOf("text", headerNames(message)));
        statement.setArray(5, connection.createArrayOf("bytea", headerValues(message)));
        statement.setObject(6, id);
    }

    private static String[] headerNames(OutboxMessage message) {
        return message.headers().stream().map(Header::name).toArray(String[]::new);
    }

    private static byte[][] headerValues(OutboxMessage message) {
        return message.headers().stream().map(Header::value).toArray(byte[][]::new);
    }

    private static byte[] one(PreparedStatement statement) throws SQLException {
        try (ResultSet rs = statement.executeQuery()) {
            assertThat(rs.next()).isTrue();
            return rs.getBytes(1);
        }
    }

    private byte[] bytes(String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
             PreparedStatement statement = connection.prepareStatement(sql)) {
            return one(statement);
        }
    }

    private List<byte[]> column(String sql) throws SQLException {
        List<byte[]> values = new ArrayList<>();
        try (Connection connection = pool.getConnection();
             PreparedStatement statement = connection.prepareStatement(sql);
             ResultSet rs = statement.executeQuery()) {
            while (rs.next()) {
                values.add(rs.getBytes(1));
            }
        }
        return values;
    }

    private String sqlError(String sql) {
        Throwable error = catchThrowable(() -> bytes(sql));
        assertThat(error).as(sql).isInstanceOf(SQLException.class);
        return error.getMessage() + " SQLSTATE " + ((SQLException) error).getSQLState();
    }
}
