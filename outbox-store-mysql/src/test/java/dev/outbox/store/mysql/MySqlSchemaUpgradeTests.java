package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link MySqlStore#createSchema()} upgrades an outbox table created by the schema before message ids, with rows in
 * it, while the previous version works on it (a writer with the old {@code INSERT}, a dispatcher taking and deleting
 * rows); then the new dispatcher drains it. Nothing is lost, and every row the new dispatcher publishes has a version
 * 7 message id: from the mark for rows older than the column, from the column default for rows written by plain SQL
 * after it. Run for MySQL 8 and MariaDB by the subclasses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class MySqlSchemaUpgradeTests {
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        pool = MySqlTestSupport.pool(kind(), MySqlTestSupport.database(kind(), "outbox_upgrade_" + suffix), "upgrade",
                6);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    @Test
    void createSchemaUpgradesAnOldTableWithRowsWhileTheOldWriterAndDispatcherRun() throws Exception {
        MySqlStore store = MySqlStore.builder(pool).table("upgraded").statementTimeout(Duration.ofSeconds(10)).build();
        for (String sql : MySqlSchema.statements(oldSchema().replace("${outbox_table}", store.table())
                .replace("${outbox_parked_table}", store.parkedTable()))) {
            MySqlTestSupport.execute(pool, sql);
        }
        AtomicInteger written = new AtomicInteger();
        for (int i = 0; i < 300; i++) {
            oldInsert(store, written.getAndIncrement());
        }
        Set<String> delivered = ConcurrentHashMap.newKeySet();
        AtomicBoolean oldVersionRuns = new AtomicBoolean(true);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread oldWriter = new Thread(() -> {
            try {
                while (oldVersionRuns.get()) {
                    oldInsert(store, written.getAndIncrement());
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "old-writer");
        Thread oldDispatcher = new Thread(() -> {
            try {
                while (oldVersionRuns.get()) {
                    oldTakeAndDelete(store, delivered);
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "old-dispatcher");
        oldWriter.start();
        oldDispatcher.start();
        Await.untilOrFail(() -> delivered.size() >= 100 || failure.get() != null, Duration.ofSeconds(30),
                () -> "old dispatcher delivered " + delivered.size());

        store.createSchema();
        int afterUpgrade = written.get();
        Await.untilOrFail(() -> written.get() >= afterUpgrade + 50 || failure.get() != null, Duration.ofSeconds(30),
                () -> "the old writer goes on after the upgrade");
        oldVersionRuns.set(false);
        oldWriter.join();
        oldDispatcher.join();
        assertThat(failure.get()).as("the old version's work failed").isNull();

        try (Connection c = pool.getConnection()) {
            store.publisher().publish(c, List.of(OutboxMessage.of("orders", "new", "new-0"),
                    OutboxMessage.of("orders", "new", "new-1")));
        }
        InMemoryBroker broker = new InMemoryBroker();
        DispatcherConfig config = DispatcherConfig.builder().pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1)).build();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("upgraded").build()) {
            dispatcher.start();
            Await.untilOrFail(() -> store.backlog() == 0, Duration.ofSeconds(60), () -> "backlog " + store.backlog());
        }
        List<OutboxRecord> published = broker.delivered();
        Set<UUID> ids = new HashSet<>();
        for (OutboxRecord r : published) {
            delivered.add(new String(r.message().value(), StandardCharsets.UTF_8));
            assertThat(r.messageId()).as("message id of %s", r).isNotNull();
            assertThat(r.messageId().version()).as("version of %s", r.messageId()).isEqualTo(7);
            assertThat(r.messageId().variant()).as("variant of %s", r.messageId()).isEqualTo(2);
            ids.add(r.messageId());
        }
        assertThat(ids).as("distinct message ids").hasSize(published.size());
        Set<String> expected = new HashSet<>(List.of("new-0", "new-1"));
        for (int i = 0; i < written.get(); i++) {
            expected.add("old-" + i);
        }
        assertThat(delivered).as("every row written, before or after the upgrade, is delivered")
                .containsExactlyInAnyOrderElementsOf(expected);
        assertThat(MySqlTestSupport.queryLong(pool, "SELECT COUNT(*) FROM information_schema.columns WHERE"
                + " table_schema = DATABASE() AND table_name = 'upgraded' AND column_name = 'next_attempt_at'"))
                .as("next_attempt_at added").isEqualTo(1);
        store.createSchema(); // idempotent on the upgraded table
    }

    private void oldInsert(MySqlStore store, int n) throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement("INSERT INTO "
                + store.table() + " (topic, `key`, value, headers) VALUES (?, ?, ?, NULL)")) {
            s.setString(1, "orders");
            s.setString(2, "key-" + n % 10);
            s.setBytes(3, ("old-" + n).getBytes(StandardCharsets.UTF_8));
            s.executeUpdate();
        }
    }

    /** The previous version's work, reduced to its statements: lock the head rows, then delete them. */
    private void oldTakeAndDelete(MySqlStore store, Set<String> delivered) throws SQLException {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            List<Long> ids = new ArrayList<>();
            List<String> values = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement("SELECT id, value FROM " + store.table()
                    + " ORDER BY id LIMIT 20 FOR UPDATE"); ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                    values.add(new String(rs.getBytes(2), StandardCharsets.UTF_8));
                }
            }
            for (Long id : ids) {
                try (PreparedStatement s = c.prepareStatement("DELETE FROM " + store.table() + " WHERE id = ?")) {
                    s.setLong(1, id);
                    s.executeUpdate();
                }
            }
            c.commit();
            c.setAutoCommit(true);
            delivered.addAll(values);
        }
    }

    /** The first release's shipped migration, the schema before message ids (outbox-store-sql's test resources). */
    private static String oldSchema() throws IOException {
        try (InputStream in = MySqlSchemaUpgradeTests.class.getClassLoader().getResourceAsStream(
                "dev/outbox/migrations-oldest/mysql/R__outbox_tables.sql")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
