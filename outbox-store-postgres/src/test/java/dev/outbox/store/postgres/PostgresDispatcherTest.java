package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The real dispatcher over the Postgres store (and the in-memory broker): everything committed is delivered,
 * each key in order, while the store's connections are killed twice along the way.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresDispatcherTest {
    private static final int KEYS = 20;
    private static final int PER_KEY = 50;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void startDatabase() {
        String url = PostgresTestSupport.database("outbox_dispatcher");
        storePool = PostgresTestSupport.pool(url, "dispatcher_store", 4);
        appPool = PostgresTestSupport.pool(url, "dispatcher_app", 4);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    @Test
    void everyCommittedMessageIsDeliveredInKeyOrderThroughKilledConnections() throws Exception {
        PostgresStore store = PostgresStore.builder(storePool).statementTimeout(Duration.ofSeconds(5)).build();
        store.createSchema();
        InMemoryBroker broker = new InMemoryBroker();
        DispatcherConfig config = DispatcherConfig.builder()
                .markBatchSize(100)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .build();
        int total = KEYS * PER_KEY;
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("pg-e2e").build()) {
            dispatcher.start();
            for (int round = 0; round < PER_KEY; round++) {
                List<OutboxMessage> batch = new ArrayList<>();
                for (int key = 0; key < KEYS; key++) {
                    batch.add(OutboxMessage.of("orders", "key-" + key, "key-" + key + "#" + round));
                }
                try (Connection c = appPool.getConnection()) {
                    c.setAutoCommit(false);
                    store.publisher().publish(c, batch);
                    c.commit();
                }
                if (round == PER_KEY / 3 || round == 2 * PER_KEY / 3) {
                    PostgresTestSupport.server().killConnections("dispatcher_store");
                }
            }
            Await.untilOrFail(() -> store.backlog() == 0 && broker.deliveredCount() >= total,
                    Duration.ofSeconds(60), () -> "delivered " + broker.deliveredCount() + " of " + total
                            + ", backlog " + store.backlog());
        }

        Map<String, Integer> lastOfKey = new HashMap<>();
        Map<String, Integer> distinct = new HashMap<>();
        for (OutboxRecord record : broker.delivered()) {
            String value = new String(record.message().value(), StandardCharsets.UTF_8);
            int sequence = Integer.parseInt(value.substring(value.indexOf('#') + 1));
            Integer last = lastOfKey.put(record.key(), sequence);
            assertThat(last == null ? -1 : last).as("key %s: %s after #%s", record.key(), value, last)
                    .isLessThanOrEqualTo(sequence);
            if (last == null || last < sequence) {
                distinct.merge(record.key(), 1, Integer::sum);
            }
        }
        assertThat(distinct).hasSize(KEYS).allSatisfy((key, count) -> assertThat(count).as(key).isEqualTo(PER_KEY));
        assertThat(store.parked(10)).isEmpty();
    }
}
