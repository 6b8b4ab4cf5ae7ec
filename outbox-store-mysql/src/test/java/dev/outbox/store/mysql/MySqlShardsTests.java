package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxShards;
import dev.outbox.spi.StoreException;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sharded table on MySQL 8 and MariaDB (the subclasses): the generated shard column agrees with
 * {@link OutboxShards#shardOf}, the shard views' statements walk the {@code (shard, id)} index, and a store refuses a
 * table made for another shard count.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class MySqlShardsTests {
    private final AtomicInteger tables = new AtomicInteger();
    private DataSource admin;
    private HikariDataSource pool;

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_shards_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        pool = MySqlTestSupport.pool(kind(), url, "shards_test", 4);
    }

    @AfterAll
    void closePool() {
        pool.close();
    }

    private MySqlStore.Builder builder(String table) {
        return MySqlStore.builder(pool).table(table);
    }

    private String newTable() {
        return "shards_" + tables.incrementAndGet();
    }

    /** Random keys of 1 to 20 code points: ASCII, Latin-1, Greek, CJK and astral (emoji), never U+0000. */
    static String[] randomKeys(int count, long seed) {
        Random random = new Random(seed);
        int[][] ranges = {{0x20, 0x7e}, {0xa0, 0xff}, {0x391, 0x3c9}, {0x4e00, 0x9fff}, {0x1f600, 0x1f64f}};
        String[] keys = new String[count];
        for (int i = 0; i < count; i++) {
            StringBuilder key = new StringBuilder();
            int length = 1 + random.nextInt(20);
            for (int c = 0; c < length; c++) {
                int[] range = ranges[random.nextInt(ranges.length)];
                key.appendCodePoint(range[0] + random.nextInt(range[1] - range[0] + 1));
            }
            keys[i] = key.toString();
        }
        return keys;
    }

    @Test
    void theGeneratedShardColumnIsOutboxShardsShardOfForRandomKeys() throws SQLException {
        MySqlStore store = builder(newTable()).shards(6).build();
        store.createSchema();
        String[] keys = randomKeys(3_000, 18);
        Map<String, Integer> inDatabase = new HashMap<>();
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + store.table()
                    + " (topic, `key`, value) VALUES ('t', ?, NULL)")) {
                for (String key : keys) {
                    insert.setString(1, key);
                    insert.addBatch();
                }
                insert.executeBatch();
            }
            c.commit();
            try (PreparedStatement select = c.prepareStatement("SELECT `key`, shard, "
                    + MySqlStore.shardSql("`key`", OutboxShards.MAX_SHARDS) + ", "
                    + "conv(substr(md5(`key`), 1, 8), 16, 10) % 7 FROM " + store.table());
                 ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    String key = rs.getString(1);
                    inDatabase.put(key, rs.getInt(2));
                    assertThat(rs.getInt(3)).as("shard of %s among %d", key, OutboxShards.MAX_SHARDS)
                            .isEqualTo(OutboxShards.shardOf(key, OutboxShards.MAX_SHARDS));
                    assertThat(rs.getInt(4)).as("the Javadoc's form, shard of %s among 7", key)
                            .isEqualTo(OutboxShards.shardOf(key, 7));
                }
            }
            c.commit();
        }
        assertThat(inDatabase).hasSize(new HashSet<>(List.of(keys)).size());
        inDatabase.forEach((key, shard) ->
                assertThat(shard).as("shard of %s", key).isEqualTo(OutboxShards.shardOf(key, 6)));
        assertThat(new HashSet<>(inDatabase.values())).as("every shard has keys").hasSize(6);
    }

    @Test
    void theShardViewsWalkTheShardIdIndexWithoutASort() throws SQLException {
        MySqlStore store = builder(newTable()).shards(4).build();
        store.createSchema();
        StringBuilder rows = new StringBuilder();
        for (int i = 0; i < 2_000; i++) {
            rows.append(i == 0 ? "" : ", ").append("('t', 'key-").append(i % 100).append("', NULL)");
        }
        MySqlTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, `key`, value) VALUES " + rows);
        MySqlTestSupport.execute(admin, "ANALYZE TABLE " + store.table());
        MySqlStore shard = (MySqlStore) store.shard(2);
        String index = store.table().replace("`", "") + "_shard";
        assertRangeScanOf(index, shard.readSql(true, 0), List.of(0L));
        assertRangeScanOf(index, shard.readSql(true, 2), List.of(100L, 5L, 10L, 20L, 30L));
        assertMarkWalksOf(index, shard.candidatesSql());
        long inShard = MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.table() + " WHERE shard = 2");
        assertThat(shard.backlog()).isEqualTo(inShard).isLessThan(2_000);
        assertThat(shard.read(0, List.of(), 10_000).rows().records()).hasSize((int) inShard)
                .allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), 4)).isEqualTo(2));
        assertThat(shard.mark(UUID.randomUUID(), 10_000).records()).hasSize((int) inShard)
                .allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), 4)).isEqualTo(2));
    }

    private void assertMarkWalksOf(String index, String sql) throws SQLException {
        try (Connection c = admin.getConnection(); PreparedStatement s = c.prepareStatement("EXPLAIN " + sql)) {
            s.setBytes(1, new byte[16]);
            s.setInt(2, 100);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).isTrue();
                String plan = rs.getString("type") + " / " + rs.getString("key") + " / " + rs.getString("Extra");
                assertThat(rs.getString("type")).as(plan).isIn("ref", "range");
                assertThat(rs.getString("key")).as(plan).isEqualTo(index);
                assertThat(String.valueOf(rs.getString("Extra"))).as(plan)
                        .doesNotContainIgnoringCase("filesort").doesNotContainIgnoringCase("temporary");
            }
        }
    }

    private void assertRangeScanOf(String index, String sql, List<Long> values) throws SQLException {
        try (Connection c = admin.getConnection(); PreparedStatement s = c.prepareStatement("EXPLAIN " + sql)) {
            for (int i = 0; i < values.size(); i++) {
                s.setLong(i + 1, values.get(i));
            }
            s.setInt(values.size() + 1, 100);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).isTrue();
                String plan = rs.getString("type") + " / " + rs.getString("key") + " / " + rs.getString("Extra");
                assertThat(rs.getString("type")).as(plan).isEqualTo("range");
                assertThat(rs.getString("key")).as(plan).isEqualTo(index);
                assertThat(String.valueOf(rs.getString("Extra"))).as(plan)
                        .doesNotContainIgnoringCase("filesort").doesNotContainIgnoringCase("temporary");
            }
        }
    }

    @Test
    void aStoreRefusesATableMadeForAnotherShardCountNamingBoth() {
        String unsharded = newTable();
        builder(unsharded).build().createSchema();
        MySqlStore six = builder(unsharded).shards(6).build();
        assertThatThrownBy(six::createSchema).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 1 shard(s)").hasMessageContaining("no generated shard column")
                .hasMessageContaining("configured with 6 shard(s)");
        assertThatThrownBy(() -> six.shard(3).read(0, List.of(), 10)).isInstanceOf(StoreException.class)
                .hasMessageContaining("configured with 6 shard(s)")
                .satisfies(e -> assertThat(((StoreException) e).isRetriable()).isFalse());

        String sharded = newTable();
        builder(sharded).shards(6).build().createSchema();
        assertThatThrownBy(() -> builder(sharded).shards(4).build().createSchema())
                .isInstanceOf(StoreException.class).hasMessageContaining("is made for 6 shard(s)")
                .hasMessageContaining("configured with 4 shard(s)");
        MySqlStore one = builder(sharded).build();
        assertThatThrownBy(() -> one.mark(UUID.randomUUID(), 10)).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 6 shard(s)").hasMessageContaining("configured with 1 shard(s)");
        assertThatThrownBy(one::acquireEpoch).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 6 shard(s)");
    }

    @Test
    void eachShardTakesItsOwnEpochRow() {
        MySqlStore store = builder(newTable()).shards(200).build();
        store.createSchema();
        assertThat(store.shard(1).acquireEpoch()).isEqualTo(1);
        assertThat(store.shard(1).acquireEpoch()).isEqualTo(2);
        assertThat(store.shard(199).acquireEpoch()).isEqualTo(1);
        assertThat(MySqlTestSupport.queryString(admin, "SELECT GROUP_CONCAT(CONCAT(id, ':', epoch) ORDER BY id)"
                + " FROM " + store.leaderTable())).isEqualTo("2:2,200:1");
    }

    /**
     * A sharded outbox on the real server, drained by one dispatcher that leads every shard (no leader transport):
     * each harvest, every row delivered, per key never going back, each shard's epoch taken in a row of its own.
     */
    @Test
    void oneDispatcherDrainsEveryShardInKeyOrder() {
        for (dev.outbox.DispatcherConfig.Harvest harvest : dev.outbox.DispatcherConfig.Harvest.values()) {
            MySqlStore store = builder(newTable()).shards(4).build();
            store.createSchema();
            dev.outbox.testkit.InMemoryBroker broker = new dev.outbox.testkit.InMemoryBroker();
            int n = 400;
            dev.outbox.DispatcherConfig config = dev.outbox.DispatcherConfig.builder().harvest(harvest)
                    .markBatchSize(100).pollInterval(java.time.Duration.ofMillis(20))
                    .build(); // the default heartbeat timeout: a loaded build machine must not depose the leader
            try (dev.outbox.Dispatcher d = dev.outbox.Dispatcher.builder(store, broker).config(config).name("sharded")
                    .build()) {
                d.start();
                try (dev.outbox.testkit.TestTransaction tx = dev.outbox.testkit.JdbcTestTransaction.begin(pool,
                        store.publisher())) {
                    for (int i = 0; i < n; i++) {
                        tx.publish(dev.outbox.OutboxMessage.of("t", "k" + (i % 37), String.valueOf(i)));
                    }
                    tx.commit();
                }
                dev.outbox.testkit.Await.untilOrFail(() -> broker.deliveredCount() >= n && store.backlog() == 0,
                        java.time.Duration.ofSeconds(60), () -> harvest + ": " + broker.deliveredCount()
                                + " delivered, backlog " + store.backlog());
                assertThat(d.shardHealth()).hasSize(4);
            }
            Map<String, Integer> last = new HashMap<>();
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (dev.outbox.OutboxRecord r : broker.delivered()) {
                int v = Integer.parseInt(new String(r.message().value(), java.nio.charset.StandardCharsets.UTF_8));
                Integer before = last.put(r.key(), v);
                // G2: a retry may repeat a key's latest message (G4: after a change of leader), never go back
                assertThat(before == null || before <= v).as("%s: key %s sent %d after %d", harvest, r.key(), v,
                        before).isTrue();
                seen.add(r.key() + "/" + v);
            }
            assertThat(seen).as(harvest + ": every message").hasSize(n);
            assertThat(MySqlTestSupport.queryLong(admin, "SELECT COUNT(*) FROM " + store.leaderTable() + " WHERE id BETWEEN 1 AND 4"))
                    .as(harvest + ": one epoch row per shard").isEqualTo(4);
        }
    }

    /**
     * The documented procedure to change the count, with no dispatcher running: {@code reshard()} from 1 to 3, 3 to
     * 5 and back to 1. Every row, its retry state kept, lands in its key's shard of the new count; the leader table
     * takes each shard's epoch; a store of the former count is refused, naming both.
     */
    @Test
    void reshardingMovesEveryRowToItsKeysShardOfTheNewCountAndTheCheckFollows() {
        String table = newTable();
        MySqlStore one = builder(table).build();
        one.createSchema();
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < 90; i++) {
            values.append(i == 0 ? "" : ", ").append("('t', 'key-").append(i % 30).append("', ").append(i % 7)
                    .append(")");
        }
        MySqlTestSupport.execute(admin, "INSERT INTO " + one.table() + " (topic, `key`, attempts) VALUES " + values);
        List<dev.outbox.OutboxRecord> before = one.read(0, List.of(), 1_000).rows().records();
        assertThat(before).hasSize(90);
        for (int count : new int[]{3, 5, 1}) {
            MySqlStore store = builder(table).shards(count).build();
            assertThatThrownBy(store::checkShards).isInstanceOf(StoreException.class)
                    .hasMessageContaining("configured with " + count + " shard(s)");
            store.reshard();
            List<dev.outbox.OutboxRecord> after = new java.util.ArrayList<>();
            for (int s = 0; s < count; s++) {
                int shard = s;
                List<dev.outbox.OutboxRecord> rows = store.shard(s).read(0, List.of(), 1_000).rows().records();
                assertThat(rows).as("%d shards: shard %d", count, s)
                        .allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), count)).isEqualTo(shard));
                after.addAll(rows);
                assertThat(store.shard(s).acquireEpoch()).as("%d shards: shard %d's epoch", count, s).isPositive();
            }
            assertThat(after).as("%d shards: every row, its attempts kept", count)
                    .extracting(r -> r.id() + "/" + r.key() + "/" + r.attempts())
                    .containsExactlyInAnyOrderElementsOf(before.stream()
                            .map(r -> r.id() + "/" + r.key() + "/" + r.attempts()).toList());
            if (count > 1) {
                assertThatThrownBy(() -> builder(table).shards(count == 3 ? 1 : 3).build().checkShards())
                        .isInstanceOf(StoreException.class).hasMessageContaining("is made for " + count + " shard(s)");
            }
        }
        assertThat(one.read(0, List.of(), 1_000).rows().records()).hasSize(90);
    }
}
