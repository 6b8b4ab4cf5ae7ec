package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.JdbcTestTransaction;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two real dispatchers elect their leader in the database ({@link SqlLeaderTransport} on an embedded H2): one
 * leads, and when it closes — drained — the other takes over at its next try, the lease released on close; every
 * message is published, and per key in order across the hand-over. The engine's own NELI machine, storage fencing
 * (each leadership takes the next epoch) and drain run unchanged over the database's lease.
 */
class H2DatabaseElectionDispatcherTest {
    private static final int MESSAGES = 400;
    private static final int KEYS = 20;
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(Duration.ofMillis(50))
            .heartbeatTimeout(Duration.ofSeconds(1)).drainTimeout(Duration.ofSeconds(5)).build();

    @Test
    void aClosedLeadersStandbyTakesOverAtItsNextTryWithNothingLostAndEveryKeyInOrder() {
        String url = "jdbc:h2:mem:h2_database_election;DB_CLOSE_DELAY=-1";
        try (HikariDataSource pool = new HikariDataSource(Jdbc.poolConfig(url, "sa", "", 12, "h2-election"))) {
            H2Store store = H2Store.builder(pool).build();
            store.createSchema();
            LeadershipTimeline timeline = new LeadershipTimeline();
            InMemoryBroker firstBroker = new InMemoryBroker();
            InMemoryBroker secondBroker = new InMemoryBroker();
            Dispatcher first = dispatcher(store, firstBroker, timeline, "d1");
            first.start();
            Await.untilOrFail(first::isLeader, Duration.ofSeconds(20), () -> "the first dispatcher leads");
            Dispatcher second = dispatcher(store, secondBroker, timeline, "d2");
            second.start();
            try {
                write(pool, store, 0, MESSAGES / 2);
                Await.untilOrFail(() -> firstBroker.deliveredCount() >= MESSAGES / 4, Duration.ofSeconds(30),
                        () -> "the leader publishes");
                assertThat(second.isLeader()).isFalse();

                timeline.add("d1", LeadershipTimeline.Kind.STOPPED, null);
                long closing = System.nanoTime();
                first.close();
                Await.untilOrFail(second::isLeader, Duration.ofSeconds(20), () -> "the standby takes over");
                long took = (System.nanoTime() - closing) / 1_000_000;
                write(pool, store, MESSAGES / 2, MESSAGES);
                Await.untilOrFail(() -> ids(firstBroker, secondBroker).size() == MESSAGES, Duration.ofSeconds(60),
                        () -> "every message published: " + ids(firstBroker, secondBroker).size());
                System.out.println("database election on H2: the standby led " + took + " ms after the leader began"
                        + " to close (acquire interval 500 ms)\n" + timeline);

                Map<String, List<Long>> perKey = new LinkedHashMap<>();
                for (InMemoryBroker b : List.of(firstBroker, secondBroker)) {
                    for (OutboxRecord r : b.delivered()) {
                        perKey.computeIfAbsent(r.message().key(), k -> new ArrayList<>()).add(r.id());
                    }
                }
                perKey.forEach((key, seen) -> assertThat(seen).as("ids of %s as published", key).isSorted());
                timeline.assertExclusive();
            } finally {
                second.close();
                first.close();
            }
        }
    }

    private static Dispatcher dispatcher(H2Store store, InMemoryBroker broker, LeadershipTimeline timeline,
                                         String name) {
        SqlLeaderTransport transport = SqlLeaderTransport.builder(store).dispatcherConfig(CONFIG)
                .deliveryTimeout(Duration.ofSeconds(1)).build();
        return Dispatcher.builder(store, broker).config(CONFIG).name(name).leaderTransport(transport)
                .listener(timeline.listener(name)).build();
    }

    private static void write(HikariDataSource pool, H2Store store, int from, int to) {
        for (int i = from; i < to; i += 20) {
            try (JdbcTestTransaction tx = JdbcTestTransaction.begin(pool, store.publisher())) {
                for (int j = i; j < Math.min(to, i + 20); j++) {
                    tx.publish(OutboxMessage.builder("orders", "key-" + (j % KEYS)).value("m" + j).build());
                }
                tx.commit();
            }
        }
    }

    private static Set<String> ids(InMemoryBroker... brokers) {
        Set<String> values = new TreeSet<>();
        for (InMemoryBroker b : brokers) {
            for (OutboxRecord r : b.delivered()) {
                values.add(new String(r.message().value(), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        return values;
    }
}
