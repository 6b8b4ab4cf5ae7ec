package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.sql.SqlShardedLeaderTransport;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.JdbcTestTransaction;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two real dispatchers of a four-shard Postgres outbox elect their shard leaders in the database
 * ({@link SqlShardedLeaderTransport}): the first leads every shard, the second joins and is given its share (each
 * shard drained by the first before the second takes it), then the first closes and the second takes the rest. Every
 * message is published, and per key in order across both moves.
 */
class PostgresShardedDatabaseElectionTest {
    private static final int SHARDS = 4;
    private static final int KEYS = 40;
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(Duration.ofMillis(50))
            .heartbeatTimeout(Duration.ofSeconds(2)).drainTimeout(Duration.ofSeconds(5)).build();

    @Test
    void shardsMoveToANewcomerAndFromALeaverWithNothingLostAndEveryKeyInOrder() {
        String url = PostgresTestSupport.database("sharded_database_election");
        try (HikariDataSource pool = PostgresTestSupport.pool(url, "sharded_election", 16)) {
            PostgresStore store = PostgresStore.builder(pool).table("orders_outbox").shards(SHARDS).build();
            store.createSchema();
            InMemoryBroker firstBroker = new InMemoryBroker();
            InMemoryBroker secondBroker = new InMemoryBroker();
            Dispatcher first = dispatcher(store, firstBroker, "d1");
            Dispatcher second = dispatcher(store, secondBroker, "d2");
            first.start();
            try {
                write(pool, store, 0, 200);
                Await.untilOrFail(() -> firstBroker.deliveredCount() >= 200, Duration.ofSeconds(60),
                        () -> "the first dispatcher leads every shard and publishes");
                second.start();
                Await.untilOrFail(() -> leading(second) == SHARDS / 2,
                        Duration.ofSeconds(60), () -> "the newcomer gets its share: " + second.shardHealth());
                write(pool, store, 200, 400);
                Await.untilOrFail(() -> values(firstBroker, secondBroker).size() == 400, Duration.ofSeconds(60),
                        () -> "published: " + values(firstBroker, secondBroker).size());
                first.close();
                Await.untilOrFail(() -> leading(second) == SHARDS,
                        Duration.ofSeconds(60), () -> "the leaver's shards move: " + second.shardHealth());
                write(pool, store, 400, 600);
                Await.untilOrFail(() -> values(firstBroker, secondBroker).size() == 600, Duration.ofSeconds(60),
                        () -> "published: " + values(firstBroker, secondBroker).size());
                assertThat(secondBroker.deliveredCount()).as("the newcomer published some").isPositive();

                Map<String, List<Long>> perKey = new LinkedHashMap<>();
                for (InMemoryBroker b : List.of(firstBroker, secondBroker)) { // keys move from the first to the second
                    for (OutboxRecord r : b.delivered()) {
                        perKey.computeIfAbsent(r.message().key(), k -> new ArrayList<>()).add(r.id());
                    }
                }
                perKey.forEach((key, seen) -> assertThat(seen).as("ids of %s as published", key).isSorted());
            } finally {
                second.close();
                first.close();
            }
        }
    }

    private static Dispatcher dispatcher(PostgresStore store, InMemoryBroker broker, String name) {
        SqlShardedLeaderTransport transport = SqlShardedLeaderTransport.builder(store).dispatcherConfig(CONFIG)
                .deliveryTimeout(Duration.ofSeconds(1)).build();
        return Dispatcher.builder(store, broker).config(CONFIG).name(name).leaderTransport(transport).build();
    }

    private static long leading(Dispatcher d) {
        return d.shardHealth().stream().filter(h -> h.status() == DispatcherHealth.Status.LEADER).count();
    }

    private static void write(HikariDataSource pool, PostgresStore store, int from, int to) {
        for (int i = from; i < to; i += 20) {
            try (JdbcTestTransaction tx = JdbcTestTransaction.begin(pool, store.publisher())) {
                for (int j = i; j < Math.min(to, i + 20); j++) {
                    tx.publish(OutboxMessage.builder("orders", "key-" + (j % KEYS)).value("m" + j).build());
                }
                tx.commit();
            }
        }
    }

    private static Set<String> values(InMemoryBroker... brokers) {
        Set<String> values = new TreeSet<>();
        for (InMemoryBroker b : brokers) {
            for (OutboxRecord r : b.delivered()) {
                values.add(new String(r.message().value(), StandardCharsets.UTF_8));
            }
        }
        return values;
    }
}
