package dev.outbox.store.sql;

import dev.outbox.testkit.Capabilities;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxShards;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.TestTransaction;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.StringJoiner;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sharded table on a real server, what every SQL store must do alike: the count check, an epoch row per shard,
 * one dispatcher draining every shard in key order, and {@code reshard()}. The subclasses add what is their own (the
 * generated column's SQL, the plans). A subclass starts the database and sets {@link #admin} and {@link #pool} in a
 * {@code @BeforeAll} method; each test makes tables of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SqlShardsTests {
    private final AtomicInteger tables = new AtomicInteger();
    private final Function<DataSource, SqlStore.Builder<?, ?>> builders;
    /** A non-pooling connection source for raw SQL. */
    protected DataSource admin;
    /** The pool the stores and the writers take connections from. */
    protected DataSource pool;

    /** @param builders a builder of the store under test on a data source */
    protected SqlShardsTests(Function<DataSource, SqlStore.Builder<?, ?>> builders) {
        this.builders = builders;
    }

    /** The {@code key} column as this database's SQL names it (a reserved word in MySQL). */
    protected abstract String keyColumn();

    /** A builder of the store under test for {@code table}, on {@link #pool}. */
    protected SqlStore.Builder<?, ?> builder(String table) {
        return builders.apply(pool).table(table);
    }

    /** A table name no other test of the class uses. */
    protected String newTable() {
        return "shards_" + tables.incrementAndGet();
    }

    /** Random keys of 1 to 20 code points: ASCII, Latin-1, Greek, CJK and astral (emoji), never U+0000. */
    protected static String[] randomKeys(int count, long seed) {
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
    void aStoreRefusesATableMadeForAnotherShardCountNamingBoth() {
        String unsharded = newTable();
        builder(unsharded).build().createSchema();
        SqlStore six = builder(unsharded).shards(6).build();
        assertThatThrownBy(six::createSchema).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 1 shard(s)").hasMessageContaining("no generated shard column")
                .hasMessageContaining("configured with 6 shard(s)");
        assertThatThrownBy(() -> Capabilities.reading(six.shard(3)).read(0, List.of(), 10)).isInstanceOf(StoreException.class)
                .hasMessageContaining("configured with 6 shard(s)")
                .satisfies(e -> assertThat(((StoreException) e).isRetriable()).isFalse());

        String sharded = newTable();
        builder(sharded).shards(6).build().createSchema();
        assertThatThrownBy(() -> builder(sharded).shards(4).build().createSchema())
                .isInstanceOf(StoreException.class).hasMessageContaining("is made for 6 shard(s)")
                .hasMessageContaining("configured with 4 shard(s)");
        SqlStore one = builder(sharded).build();
        assertThatThrownBy(() -> one.mark(UUID.randomUUID(), 10)).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 6 shard(s)").hasMessageContaining("configured with 1 shard(s)");
        assertThatThrownBy(one::acquireEpoch).isInstanceOf(StoreException.class)
                .hasMessageContaining("is made for 6 shard(s)");
        assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + one.leaderTable()))
                .as("the refused store took no epoch").isZero();
    }

    @Test
    void eachShardTakesItsOwnEpochRow() throws SQLException {
        SqlStore store = builder(newTable()).shards(3).build();
        store.createSchema();
        assertThat(Capabilities.fencing(store.shard(1)).acquireEpoch()).isEqualTo(1);
        assertThat(Capabilities.fencing(store.shard(1)).acquireEpoch()).isEqualTo(2);
        assertThat(Capabilities.fencing(store.shard(2)).acquireEpoch()).isEqualTo(1);
        StringJoiner rows = new StringJoiner(",");
        try (Connection c = admin.getConnection();
             PreparedStatement s = c.prepareStatement("SELECT id, epoch FROM " + store.leaderTable() + " ORDER BY id");
             ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                rows.add(rs.getLong(1) + ":" + rs.getLong(2));
            }
        }
        assertThat(rows.toString()).as("row i + 1 is shard i's").isEqualTo("2:2,3:1");
    }

    /**
     * A sharded outbox on the real server, drained by one dispatcher that leads every shard (no leader transport):
     * each harvest, every row delivered, per key never going back, each shard's epoch taken in a row of its own.
     */
    @Test
    void oneDispatcherDrainsEveryShardInKeyOrder() {
        for (DispatcherConfig.Harvest harvest : DispatcherConfig.Harvest.values()) {
            SqlStore store = builder(newTable()).shards(4).build();
            store.createSchema();
            InMemoryBroker broker = new InMemoryBroker();
            int n = 400;
            DispatcherConfig config = DispatcherConfig.builder().harvest(harvest).markBatchSize(100)
                    .pollInterval(Duration.ofMillis(20))
                    .build(); // the default heartbeat timeout: a loaded build machine must not depose the leader
            try (Dispatcher d = Dispatcher.builder(store, broker).config(config).name("sharded").build()) {
                d.start();
                try (TestTransaction tx = JdbcTestTransaction.begin(pool, store.publisher())) {
                    for (int i = 0; i < n; i++) {
                        tx.publish(OutboxMessage.of("t", "k" + (i % 37), String.valueOf(i)));
                    }
                    tx.commit();
                }
                Await.untilOrFail(() -> broker.deliveredCount() >= n && store.backlog() == 0,
                        Duration.ofSeconds(60), () -> harvest + ": " + broker.deliveredCount()
                                + " delivered, backlog " + store.backlog());
                assertThat(d.shardHealth()).hasSize(4);
            }
            Map<String, Integer> last = new HashMap<>();
            Set<String> seen = new HashSet<>();
            for (OutboxRecord r : broker.delivered()) {
                int v = Integer.parseInt(new String(r.message().value(), StandardCharsets.UTF_8));
                Integer before = last.put(r.key(), v);
                // G2: a retry may repeat a key's latest message (G4: after a change of leader), never go back
                assertThat(before == null || before <= v).as("%s: key %s sent %d after %d", harvest, r.key(), v,
                        before).isTrue();
                seen.add(r.key() + "/" + v);
            }
            assertThat(seen).as(harvest + ": every message").hasSize(n);
            assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + store.leaderTable()
                    + " WHERE id BETWEEN 1 AND 4")).as(harvest + ": one epoch row per shard").isEqualTo(4);
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
        SqlStore one = builder(table).build();
        one.createSchema();
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < 90; i++) {
            values.append(i == 0 ? "" : ", ").append("('t', 'key-").append(i % 30).append("', ").append(i % 7)
                    .append(")");
        }
        Jdbc.execute(admin, "INSERT INTO " + one.table() + " (topic, " + keyColumn() + ", attempts) VALUES "
                + values);
        List<OutboxRecord> before = one.read(0, List.of(), 1_000).rows().records();
        assertThat(before).hasSize(90);
        for (int count : new int[]{3, 5, 1}) {
            SqlStore store = builder(table).shards(count).build();
            assertThatThrownBy(store::checkShards).isInstanceOf(StoreException.class)
                    .hasMessageContaining("configured with " + count + " shard(s)");
            store.reshard();
            List<OutboxRecord> after = new ArrayList<>();
            for (int s = 0; s < count; s++) {
                int shard = s;
                List<OutboxRecord> rows = Capabilities.reading(store.shard(s)).read(0, List.of(), 1_000).rows().records();
                assertThat(rows).as("%d shards: shard %d", count, s)
                        .allSatisfy(r -> assertThat(OutboxShards.shardOf(r.key(), count)).isEqualTo(shard));
                after.addAll(rows);
                assertThat(Capabilities.fencing(store.shard(s)).acquireEpoch()).as("%d shards: shard %d's epoch", count, s).isPositive();
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
