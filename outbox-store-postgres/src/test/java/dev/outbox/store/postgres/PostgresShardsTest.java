package dev.outbox.store.postgres;

import dev.outbox.testkit.Capabilities;

import dev.outbox.spi.CommitSignals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxShards;
import dev.outbox.spi.IdRange;
import dev.outbox.store.sql.SqlShardsTests;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sharded table on Postgres: the generated shard column agrees with {@link OutboxShards#shardOf}, the shard views'
 * statements walk the {@code (shard, id)} index, the shards share one listening connection, and shards move between
 * dispatchers over the real database; what every SQL store does alike is in {@link SqlShardsTests}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresShardsTest extends SqlShardsTests {
    private HikariDataSource hikari;

    PostgresShardsTest() {
        super(PostgresStore::builder);
    }

    @BeforeAll
    void startDatabase() {
        String url = PostgresTestSupport.database("outbox_shards");
        admin = PostgresTestSupport.admin(url);
        hikari = PostgresTestSupport.pool(url, "shards", 4);
        pool = hikari;
    }

    @AfterAll
    void closePool() {
        hikari.close();
    }

    @Override
    protected String keyColumn() {
        return "key";
    }

    private PostgresStore.Builder pgBuilder(String table) {
        return PostgresStore.builder(pool).table(table);
    }

    @Test
    void theGeneratedShardColumnIsOutboxShardsShardOfForRandomKeys() throws SQLException {
        PostgresStore store = pgBuilder(newTable()).shards(6).build();
        store.createSchema();
        String[] keys = randomKeys(3_000, 18);
        Map<String, Integer> inDatabase = new HashMap<>();
        try (Connection c = admin.getConnection()) {
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + store.table()
                    + " (topic, key, value) SELECT 't', k, NULL FROM unnest(?) AS k")) {
                insert.setArray(1, c.createArrayOf("text", keys));
                assertThat(insert.executeUpdate()).isEqualTo(keys.length);
            }
            try (PreparedStatement select = c.prepareStatement("SELECT key, shard FROM " + store.table());
                 ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    inDatabase.put(rs.getString(1), rs.getInt(2));
                }
            }
            // The function itself at the largest count, where all 32 bits of the hash matter more.
            try (PreparedStatement select = c.prepareStatement("SELECT k, " + PostgresSchema.shardSql("k",
                    OutboxShards.MAX_SHARDS) + " FROM unnest(?) AS k")) {
                select.setArray(1, c.createArrayOf("text", keys));
                try (ResultSet rs = select.executeQuery()) {
                    while (rs.next()) {
                        assertThat(rs.getInt(2)).as("shard of %s among %d", rs.getString(1), OutboxShards.MAX_SHARDS)
                                .isEqualTo(OutboxShards.shardOf(rs.getString(1), OutboxShards.MAX_SHARDS));
                    }
                }
            }
        }
        assertThat(inDatabase).hasSize(new java.util.HashSet<>(List.of(keys)).size());
        inDatabase.forEach((key, shard) ->
                assertThat(shard).as("shard of %s", key).isEqualTo(OutboxShards.shardOf(key, 6)));
        assertThat(new java.util.HashSet<>(inDatabase.values())).as("every shard has keys").hasSize(6);
    }

    @Test
    void theJavadocsSqlFormIsTheSameFunction() throws SQLException {
        String[] keys = randomKeys(500, 7);
        try (Connection c = admin.getConnection();
             PreparedStatement select = c.prepareStatement(
                     "SELECT k, (('x' || substr(md5(k), 1, 8))::bit(32)::bigint % 7) FROM unnest(?) AS k")) {
            select.setArray(1, c.createArrayOf("text", keys));
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    assertThat(rs.getInt(2)).isEqualTo(OutboxShards.shardOf(rs.getString(1), 7));
                }
            }
        }
    }

    @Test
    void theShardViewsMarkAndReadThroughTheShardIdIndex() {
        PostgresStore store = pgBuilder(newTable()).shards(4).build();
        store.createSchema();
        PostgresTestSupport.execute(admin, "INSERT INTO " + store.table() + " (topic, key, value)"
                + " SELECT 't', 'key-' || (i % 100), NULL FROM generate_series(1, 5000) i");
        PostgresTestSupport.execute(admin, "ANALYZE " + store.table());
        String index = store.table().replace("\"", "") + "_shard";
        PostgresStore shard = (PostgresStore) store.shard(2);

        String mark = shard.explainMark(UUID.randomUUID(), 100);
        assertThat(mark).as("plan:%n%s", mark).contains("Index Scan using " + index)
                .contains("Index Cond: ((shard >= 2) AND (shard <= 2))").doesNotContain("Seq Scan").doesNotContain("Sort");
        String read = shard.explainRead(1_000, List.of(new IdRange(10, 20)), 100);
        assertThat(read).as("plan:%n%s", read)
                .containsPattern("Index (Only )?Scan using " + index + " .*\\n\\s*Index Cond: \\(\\(shard >= 2\\) AND \\(shard <= 2\\) AND \\(id > ")
                // a recheck range is read by an index range scan (of either index: the range bounds it)
                .containsPattern("Index Cond: \\(.*\\(id >= r.lo\\) AND \\(id <= LEAST\\(r.hi, ")
                .doesNotStartWith("Sort").doesNotContain("Seq Scan").doesNotContain("Bitmap");
        long inShard = PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM " + store.table()
                + " WHERE shard = 2");
        assertThat(shard.backlog()).isEqualTo(inShard).isLessThan(5_000);
        assertThat(shard.read(0, List.of(), 10_000).rows().records()).hasSize((int) inShard)
                .allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), 4)).isEqualTo(2));
    }

    @Test
    void theUnshardedSchemaHasNoShardColumnAndTheShardedOneHasItAndItsIndex() {
        PostgresStore one = pgBuilder("plain").build();
        PostgresStore six = pgBuilder("plain").shards(6).build();
        assertThat(one.schemaSql()).doesNotContain("shard").contains("CHECK (id = 1)");
        assertThat(six.schemaSql())
                .contains("shard integer GENERATED ALWAYS AS (" + PostgresSchema.shardSql("key", 6) + ") STORED")
                .contains("CREATE INDEX IF NOT EXISTS \"plain_shard\" ON \"plain\" (shard, id)")
                .contains("CHECK (id >= 0)");
        assertThat(six.shards()).isEqualTo(6);
        assertThat(Capabilities.sharding(six.shard(5)).shards()).isEqualTo(1);
        assertThat(one.shard(0)).isSameAs(one);
        assertThat(six.shard(0).publisher()).isSameAs(six.publisher());
        assertThatThrownBy(() -> six.shard(6)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shard index 6");
        assertThatThrownBy(() -> pgBuilder("plain").shards(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(": 0");
    }

    @Test
    void theWalHarvestCannotBeSharded() {
        assertThatThrownBy(() -> pgBuilder("wal").shards(3)
                .walHarvest(WalHarvest.builder("jdbc:postgresql://localhost/db").build()).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("WAL harvest cannot be sharded")
                .hasMessageContaining("shards(3)");
    }

    /** The shards' harvests share one listening connection, and a commit to any shard wakes every one of them. */
    @Test
    void theShardsShareOneListeningConnectionThatWakesThemAll() throws Exception {
        PostgresStore store = pgBuilder(newTable()).shards(3).build();
        store.createSchema();
        // An earlier test's dispatcher hands its listening connection back a moment after it closed.
        dev.outbox.testkit.Await.untilOrFail(() -> hikari.getHikariPoolMXBean().getActiveConnections() == 0,
                java.time.Duration.ofSeconds(20), () -> "the pool idle before the test");
        java.util.concurrent.atomic.AtomicInteger[] woken = new java.util.concurrent.atomic.AtomicInteger[3];
        List<dev.outbox.spi.CommitSignals.CommitWatch> watches = new java.util.ArrayList<>();
        try {
            for (int s = 0; s < 3; s++) {
                java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
                woken[s] = count;
                watches.add(Capabilities.signals(store.shard(s)).watchCommits(count::incrementAndGet));
            }
            dev.outbox.testkit.Await.untilOrFail(() -> watches.stream().allMatch(dev.outbox.spi.CommitSignals.CommitWatch::listening),
                    java.time.Duration.ofSeconds(20), () -> "the shards' watches listen");
            assertThat(hikari.getHikariPoolMXBean().getActiveConnections())
                    .as("one connection of the store's pool listens for the three shards").isEqualTo(1);
            int[] before = new int[3];
            for (int s = 0; s < 3; s++) {
                before[s] = woken[s].get();
            }
            try (dev.outbox.testkit.TestTransaction tx = dev.outbox.testkit.JdbcTestTransaction.begin(pool,
                    store.publisher())) {
                tx.publish(dev.outbox.OutboxMessage.of("t", "one key", "v"));
                tx.commit();
            }
            dev.outbox.testkit.Await.untilOrFail(() -> woken[0].get() > before[0] && woken[1].get() > before[1]
                    && woken[2].get() > before[2], java.time.Duration.ofSeconds(20), () -> "every shard woken");
        } finally {
            watches.forEach(dev.outbox.spi.CommitSignals.CommitWatch::close);
        }
        assertThat(watches.get(0).listening()).as("closed").isFalse();
    }

    /**
     * Three dispatchers share a sharded Postgres outbox over {@code InMemoryShardedLeaderGroup}: the shards spread,
     * one dispatcher leaves and its shards move (each new leader takes its shard's next epoch in the database), a
     * fourth joins and takes its share; every message arrives, per key never going back.
     */
    @Test
    void shardsMoveBetweenDispatchersOverTheRealDatabaseWithoutLosingOrReordering() {
        for (dev.outbox.DispatcherConfig.Harvest harvest : dev.outbox.DispatcherConfig.Harvest.values()) {
            PostgresStore store = pgBuilder(newTable()).shards(4).build();
            store.createSchema();
            dev.outbox.testkit.InMemoryBroker broker = new dev.outbox.testkit.InMemoryBroker();
            dev.outbox.testkit.InMemoryShardedLeaderGroup group = new dev.outbox.testkit.InMemoryShardedLeaderGroup(4);
            List<dev.outbox.Dispatcher> dispatchers = new java.util.ArrayList<>();
            int batch = 150;
            java.time.Duration wait = java.time.Duration.ofSeconds(60);
            try {
                for (int i = 0; i < 2; i++) {
                    dispatchers.add(startMember(store, broker, group, harvest, i));
                }
                dev.outbox.testkit.Await.untilOrFail(() -> group.shardsOf(0).size() == 2
                        && group.shardsOf(1).size() == 2, wait, () -> harvest + ": not spread 2/2");
                write(store, 0, batch);
                dispatchers.get(0).close(); // leaves: its shards go to the other
                dev.outbox.testkit.Await.untilOrFail(() -> group.shardsOf(1).size() == 4, wait,
                        () -> harvest + ": the leaver's shards did not move");
                write(store, batch, batch);
                dispatchers.add(startMember(store, broker, group, harvest, 2)); // joins: takes its share
                dev.outbox.testkit.Await.untilOrFail(() -> group.shardsOf(2).size() == 2, wait,
                        () -> harvest + ": the newcomer did not take its share");
                write(store, 2 * batch, batch);
                dev.outbox.testkit.Await.untilOrFail(() -> store.backlog() == 0 && distinct(broker) == 3 * batch,
                        wait, () -> harvest + ": backlog " + store.backlog() + ", " + distinct(broker) + " delivered");
            } finally {
                dispatchers.forEach(dev.outbox.Dispatcher::close);
            }
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT sum(epoch) FROM " + store.leaderTable()))
                    .as("%s: one epoch per shard leadership: 4, plus one per move (2 on leaving, 2 on joining)",
                            harvest).isGreaterThanOrEqualTo(8);
            Map<String, Integer> last = new HashMap<>();
            for (dev.outbox.OutboxRecord r : broker.delivered()) {
                int v = Integer.parseInt(new String(r.message().value(), java.nio.charset.StandardCharsets.UTF_8));
                Integer before = last.put(r.key(), v);
                assertThat(before == null || before <= v).as("%s: key %s sent %d after %d", harvest, r.key(), v,
                        before).isTrue();
            }
        }
    }

    private dev.outbox.Dispatcher startMember(PostgresStore store, dev.outbox.testkit.InMemoryBroker broker,
                                                     dev.outbox.testkit.InMemoryShardedLeaderGroup group,
                                                     dev.outbox.DispatcherConfig.Harvest harvest, int i) {
        dev.outbox.Dispatcher d = dev.outbox.Dispatcher.builder(store, new dev.outbox.spi.SharedMessageBroker(broker))
                .leaderTransport(group.newMember())
                .config(dev.outbox.DispatcherConfig.builder().harvest(harvest).markBatchSize(50)
                        .pollInterval(java.time.Duration.ofMillis(20)).build())
                .name("member-" + i).build();
        d.start();
        return d;
    }

    private void write(PostgresStore store, int from, int n) {
        try (dev.outbox.testkit.TestTransaction tx = dev.outbox.testkit.JdbcTestTransaction.begin(pool,
                store.publisher())) {
            for (int i = from; i < from + n; i++) {
                tx.publish(dev.outbox.OutboxMessage.of("t", "k" + (i % 41), String.valueOf(i)));
            }
            tx.commit();
        }
    }

    private static int distinct(dev.outbox.testkit.InMemoryBroker broker) {
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (dev.outbox.OutboxRecord r : broker.delivered()) {
            seen.add(new String(r.message().value(), java.nio.charset.StandardCharsets.UTF_8));
        }
        return seen.size();
    }
}
