package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxShards;
import dev.outbox.store.sql.SqlShardsTests;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sharded table on MySQL 8 and MariaDB (the subclasses): the generated shard column agrees with
 * {@link OutboxShards#shardOf}, and the shard views' statements walk the {@code (shard, id)} index; what every SQL
 * store does alike is in {@link SqlShardsTests}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class MySqlShardsTests extends SqlShardsTests {
    private HikariDataSource hikari;

    MySqlShardsTests() {
        super(MySqlStore::builder);
    }

    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_shards_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        hikari = MySqlTestSupport.pool(kind(), url, "shards_test", 4);
        pool = hikari;
    }

    @AfterAll
    void closePool() {
        hikari.close();
    }

    @Override
    protected String keyColumn() {
        return "`key`";
    }

    private MySqlStore.Builder myBuilder(String table) {
        return MySqlStore.builder(pool).table(table);
    }

    @Test
    void theGeneratedShardColumnIsOutboxShardsShardOfForRandomKeys() throws SQLException {
        MySqlStore store = myBuilder(newTable()).shards(6).build();
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
                    + MySqlSchema.shardSql("`key`", OutboxShards.MAX_SHARDS) + ", "
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
        MySqlStore store = myBuilder(newTable()).shards(4).build();
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
}
