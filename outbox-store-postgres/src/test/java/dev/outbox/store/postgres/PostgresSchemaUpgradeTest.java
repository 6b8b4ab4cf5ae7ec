package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.ReadResult;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link PostgresStore#createSchema()} upgrades an outbox table created by the schema before message ids, with rows
 * in it, while the previous version is still at work on it: a writer inserting rows with the old {@code INSERT} and
 * a dispatcher marking rows with the old statement, holding them in flight and purging them. After the upgrade the
 * new dispatcher takes over (a rolling deploy). Nothing is lost, the old writer was never blocked for long, and every
 * row the new dispatcher publishes has a version 7 message id: rows written before the upgrade get theirs when they
 * are marked, rows written by plain SQL after it from the column default.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresSchemaUpgradeTest {
    /** The first release's shipped migration, the schema before message ids (outbox-store-sql's test resources). */
    private static final String OLD_SCHEMA = "dev/outbox/migrations-oldest/postgresql/R__outbox_tables.sql";
    private static HikariDataSource pool;

    @BeforeAll
    static void startDatabase() {
        pool = PostgresTestSupport.pool(PostgresTestSupport.database("outbox_upgrade"), "upgrade", 6);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @Test
    void createSchemaUpgradesAnOldTableWithRowsWhileTheOldWriterAndDispatcherRun() throws Exception {
        PostgresStore store = PostgresStore.builder(pool).table("upgraded").statementTimeout(Duration.ofSeconds(10))
                .build();
        PostgresTestSupport.execute(pool, oldSchema().replace("${outbox_table}", store.table())
                .replace("${outbox_parked_table}", store.parkedTable()));
        AtomicInteger written = new AtomicInteger();
        for (int i = 0; i < 300; i++) {
            oldInsert(store, written.getAndIncrement());
        }
        Set<String> delivered = ConcurrentHashMap.newKeySet();
        AtomicBoolean oldVersionRuns = new AtomicBoolean(true);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicInteger writtenDuringUpgrade = new AtomicInteger();
        AtomicBoolean upgrading = new AtomicBoolean();
        Thread oldWriter = new Thread(() -> {
            try {
                while (oldVersionRuns.get()) {
                    oldInsert(store, written.getAndIncrement());
                    if (upgrading.get()) {
                        writtenDuringUpgrade.incrementAndGet();
                    }
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "old-writer");
        Thread oldDispatcher = new Thread(() -> {
            try {
                UUID leader = UUID.randomUUID();
                while (oldVersionRuns.get()) {
                    oldMarkAndPurge(store, leader, delivered);
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "old-dispatcher");
        oldWriter.start();
        oldDispatcher.start();
        Await.untilOrFail(() -> delivered.size() >= 100, Duration.ofSeconds(30), () -> "old dispatcher delivered "
                + delivered.size());

        upgrading.set(true);
        store.createSchema();
        upgrading.set(false);
        Await.untilOrFail(() -> writtenDuringUpgrade.get() > 0 || failure.get() != null, Duration.ofSeconds(10),
                () -> "the old writer wrote nothing after the upgrade");
        int afterUpgrade = written.get();
        Await.untilOrFail(() -> written.get() >= afterUpgrade + 50, Duration.ofSeconds(30),
                () -> "the old writer goes on after the upgrade");
        oldVersionRuns.set(false);
        oldWriter.join();
        oldDispatcher.join();
        assertThat(failure.get()).as("the old version's work failed").isNull();

        // The new version: its publisher and dispatcher.
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
            assertThat(MessageIds.unixMillis(r.messageId())).isCloseTo(System.currentTimeMillis(),
                    org.assertj.core.data.Offset.offset(600_000L));
            ids.add(r.messageId());
        }
        assertThat(ids).as("distinct message ids").hasSize(published.size());
        assertThat(published.size()).as("rows left for the new dispatcher").isPositive();
        Set<String> expected = new HashSet<>(List.of("new-0", "new-1"));
        for (int i = 0; i < written.get(); i++) {
            expected.add("old-" + i);
        }
        assertThat(delivered).as("every row written, before or after the upgrade, is delivered")
                .containsExactlyInAnyOrderElementsOf(expected);
        assertThat(PostgresTestSupport.queryLong(pool, "SELECT count(*) FROM information_schema.columns WHERE"
                + " table_name IN ('upgraded', 'upgraded_parked') AND column_name = 'message_id'")).isEqualTo(2);
        assertThat(PostgresTestSupport.queryLong(pool, "SELECT count(*) FROM information_schema.columns WHERE"
                + " table_name = 'upgraded' AND column_name = 'next_attempt_at'")).isEqualTo(1);
        store.createSchema(); // idempotent on the upgraded table
    }

    /**
     * A table of an earlier version has a plain {@code nextval} id default. {@code createSchema()} gives it the
     * default that takes the transaction id first, in place (same sequence, same rows, same file), only once: a second
     * call changes nothing in the catalog. The cursor read then works on it: the old rows (without message ids) are
     * returned with ids stored for them, and a row held by an open transaction below a committed one is covered by the
     * read's gap token.
     */
    @Test
    void createSchemaGivesAnOldTableTheTransactionIdFirstIdDefaultInPlace() throws Exception {
        PostgresStore store = PostgresStore.builder(pool).table("xid_first").build();
        PostgresTestSupport.execute(pool, oldSchema().replace("${outbox_table}", store.table())
                .replace("${outbox_parked_table}", store.parkedTable()));
        for (int i = 0; i < 3; i++) {
            oldInsert(store, i);
        }
        String defaultSql = "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a"
                + " ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = '" + store.table()
                + "'::regclass AND a.attname = 'id'";
        String attrdefVersion = "SELECT CAST(CAST(d.xmin AS text) AS bigint) FROM pg_attrdef d JOIN pg_attribute a"
                + " ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = '" + store.table()
                + "'::regclass AND a.attname = 'id'";
        String fileSql = "SELECT pg_relation_filenode('" + store.table() + "')";
        assertThat(text(defaultSql)).doesNotContain("pg_current_xact_id");
        long file = PostgresTestSupport.queryLong(pool, fileSql);

        store.createSchema();

        assertThat(text(defaultSql).replaceAll("\\s+", " ")).as("the id default")
                .contains("CASE WHEN (pg_current_xact_id() IS NOT NULL) THEN (set_config('dev_outbox.id'::text,"
                        + " (nextval('xid_first_id_seq'::regclass))::text, true))::bigint");
        assertThat(PostgresTestSupport.queryLong(pool, fileSql)).as("the table was not rewritten").isEqualTo(file);
        long version = PostgresTestSupport.queryLong(pool, attrdefVersion);
        store.createSchema();
        assertThat(PostgresTestSupport.queryLong(pool, attrdefVersion)).as("a second createSchema() leaves the"
                + " default alone").isEqualTo(version);

        ReadResult old = store.read(0, List.of(), 10);
        assertThat(old.rows().records()).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .containsExactly("old-0", "old-1", "old-2");
        assertThat(old.rows().records()).allSatisfy(r -> assertThat(r.messageId().version()).isEqualTo(7));
        try (Connection t1 = pool.getConnection(); Connection t0 = pool.getConnection()) {
            t1.setAutoCommit(false);
            t0.setAutoCommit(false);
            long t1Xid = xid(t1);
            oldInsert(t0, store, 3);
            long t0Xid = xid(t0);
            oldInsert(t1, store, 4);
            t1.commit();
            ReadResult read = store.read(old.maxId(), List.of(), 10);
            assertThat(read.rows().records()).extracting(r -> r.id()).containsExactly(old.maxId() + 2);
            assertThat(read.gapToken()).as("token vs the open writer's xid %s (the other's %s)", t0Xid, t1Xid)
                    .isGreaterThan(t0Xid);
            t0.commit();
        }
        assertThat(store.read(old.maxId() + 2, List.of(IdRange.of(old.maxId() + 1)), 10).rows().records())
                .extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8)).containsExactly("old-3");
    }

    private static long xid(Connection c) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT CAST(CAST(pg_current_xact_id() AS text) AS bigint)");
             ResultSet rs = s.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String text(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql);
             ResultSet rs = s.executeQuery()) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static void oldInsert(PostgresStore store, int n) throws SQLException {
        try (Connection c = pool.getConnection()) {
            oldInsert(c, store, n);
        }
    }

    private static void oldInsert(Connection c, PostgresStore store, int n) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("INSERT INTO "
                + store.table() + " (topic, key, value, header_names, header_values) VALUES (?, ?, ?, ?, ?)")) {
            s.setString(1, "orders");
            s.setString(2, "key-" + n % 10);
            s.setBytes(3, ("old-" + n).getBytes(StandardCharsets.UTF_8));
            s.setArray(4, c.createArrayOf("text", new String[0]));
            s.setArray(5, c.createArrayOf("bytea", new byte[0][]));
            s.executeUpdate();
        }
    }

    /** The previous version's mark, then its purge. */
    private static void oldMarkAndPurge(PostgresStore store, UUID leader, Set<String> delivered)
            throws SQLException {
        List<Long> ids = new ArrayList<>();
        List<String> values = new ArrayList<>();
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement("UPDATE " + store.table()
                + " SET leader_id = ? WHERE id = ANY(ARRAY(SELECT id FROM " + store.table()
                + " WHERE leader_id IS NULL OR leader_id <> ? ORDER BY id LIMIT 20)) RETURNING id, value")) {
            s.setObject(1, leader);
            s.setObject(2, leader);
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                    values.add(new String(rs.getBytes(2), StandardCharsets.UTF_8));
                }
            }
        }
        if (ids.isEmpty()) {
            return;
        }
        // Between the two statements the rows are in flight (marked, not yet purged), as with a broker call.
        try (Connection c = pool.getConnection();
             PreparedStatement s = c.prepareStatement("DELETE FROM " + store.table() + " WHERE id = ANY(?)")) {
            Array array = c.createArrayOf("bigint", ids.toArray());
            s.setArray(1, array);
            s.executeUpdate();
        }
        delivered.addAll(values);
    }

    private static String oldSchema() throws IOException {
        try (InputStream in = PostgresSchemaUpgradeTest.class.getClassLoader().getResourceAsStream(OLD_SCHEMA)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
