package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.BrokerFaults;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox table on a full disk: its tablespace is a 1 MiB file system of its own
 * ({@link dev.outbox.testservers.JdbcServer#createSmallTablespace}). Postgres refuses the write with SQLSTATE 53100
 * ({@code disk_full}), which the store reports as retriable, and writing works again once the table has room.
 * Under a running dispatcher, a park that meets the full disk is retried (not held, not dropped) until space is
 * freed: nothing is lost, per-key order holds, and the outbox drains once the disk has room.
 *
 * <p>The small file system is a {@code tmpfs}: mounting it needs root or {@code CAP_SYS_ADMIN}, which the build
 * machine grants; where it does not, {@code createSmallTablespace} fails with a message saying so.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresDiskFullTest {

    @Test
    void aFullDiskIsARetriableFailureThatEndsWhenSpaceIsFreed() throws SQLException {
        String url = PostgresTestSupport.database("outbox_disk_full");
        String tablespace = PostgresTestSupport.server().createSmallTablespace("outbox_tiny", 1024 * 1024);
        DataSource admin = PostgresTestSupport.admin(url);
        try (HikariDataSource pool = PostgresTestSupport.pool(url, "disk_full", 2)) {
            PostgresStore store = PostgresStore.builder(pool).table("full_outbox").build();
            store.createSchema();
            PostgresTestSupport.execute(admin, "ALTER TABLE full_outbox SET TABLESPACE " + tablespace);

            StoreException full = null;
            int written = 0;
            byte[] value = new byte[2048];
            for (int batch = 0; batch < 100 && full == null; batch++) {
                List<OutboxMessage> messages = new ArrayList<>();
                for (int i = 0; i < 50; i++) {
                    messages.add(OutboxMessage.of("orders", "key-" + (i % 7), value));
                }
                try (Connection c = pool.getConnection()) {
                    store.publisher().publish(c, messages);
                    written += messages.size();
                } catch (StoreException e) {
                    full = e;
                }
            }

            assertThat(full).as("the 1 MiB tablespace filled up after %d messages", written).isNotNull();
            assertThat(full.getMessage()).contains("SQLSTATE 53100");
            assertThat(full.isRetriable()).as("disk full is retriable: %s", full.getMessage()).isTrue();
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM full_outbox")).isEqualTo(written);

            // An operator gives the table room (here: moves it to a disk with space): the same write works again,
            // and every row written before the disk filled is still there.
            PostgresTestSupport.execute(admin, "ALTER TABLE full_outbox SET TABLESPACE pg_default");
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, List.of(OutboxMessage.of("orders", "key-0", value)));
            }
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM full_outbox"))
                    .isEqualTo(written + 1);
        }
    }

    @Test
    void aParkOnAFullDiskIsRetriedUntilSpaceIsFreedAndNothingIsLost() throws Exception {
        String url = PostgresTestSupport.database("outbox_disk_full_dispatch");
        String tablespace = PostgresTestSupport.server().createSmallTablespace("outbox_tiny_parked", 1024 * 1024);
        DataSource admin = PostgresTestSupport.admin(url);
        int keys = 8;
        int rounds = 10;
        try (HikariDataSource pool = PostgresTestSupport.pool(url, "disk_full_dispatch", 3)) {
            PostgresStore store = PostgresStore.builder(pool).statementTimeout(Duration.ofSeconds(5)).build();
            store.createSchema();
            // The parked table on the small disk, which a filler table fills up.
            PostgresTestSupport.execute(admin, "ALTER TABLE outbox_parked SET TABLESPACE " + tablespace);
            PostgresTestSupport.execute(admin, "CREATE TABLE filler (v bytea) TABLESPACE " + tablespace);
            try (Connection c = admin.getConnection(); Statement st = c.createStatement()) {
                SQLException full = null;
                for (int i = 0; i < 1000 && full == null; i++) {
                    try {
                        st.execute("INSERT INTO filler SELECT decode(repeat('ab', 2000), 'hex')"
                                + " FROM generate_series(1, 16)");
                    } catch (SQLException e) {
                        full = e;
                    }
                }
                assertThat((Object) full).as("the small disk filled up").isNotNull();
                assertThat(full.getSQLState()).isEqualTo("53100");
            }

            InMemoryBroker broker = InMemoryBroker.builder().faults(r -> value(r).startsWith("poison")
                    ? BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_PERMANENT) : BrokerFaults.Fault.ACK).build();
            Map<String, Integer> failures = new ConcurrentHashMap<>();
            AtomicInteger parked = new AtomicInteger();
            DispatcherListener listener = new DispatcherListener() {
                @Override
                public void failure(String operation, Throwable error) {
                    failures.merge(operation, 1, Integer::sum);
                }

                @Override
                public void recordParked(dev.outbox.ParkedRecord record) {
                    parked.incrementAndGet();
                }
            };
            DispatcherConfig config = DispatcherConfig.builder()
                    .pollInterval(Duration.ofMillis(10))
                    .markBackoff(Duration.ofMillis(1))
                    .ioErrorBackoff(Duration.ofMillis(20))
                    .maxIoErrorBackoff(Duration.ofMillis(200))
                    .drainTimeout(Duration.ofSeconds(1))
                    .build();
            List<OutboxMessage> messages = new ArrayList<>();
            for (int round = 0; round < rounds; round++) {
                if (round == rounds / 2) {
                    messages.add(OutboxMessage.of("orders", "p", "poison-p"));
                    messages.add(OutboxMessage.of("orders", "p", "p#1"));
                }
                for (int key = 0; key < keys; key++) {
                    messages.add(OutboxMessage.of("orders", "key-" + key, "key-" + key + "#" + round));
                }
            }
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).listener(listener)
                    .name("disk-full").build()) {
                dispatcher.start();
                try (Connection c = admin.getConnection()) {
                    store.publisher().publish(c, messages);
                }
                Await.untilOrFail(() -> failures.getOrDefault("park", 0) >= 3, Duration.ofSeconds(30),
                        () -> "park failing on the full disk, retried: " + failures + ", " + dispatcher.health());
                assertThat(dispatcher.health().lastFailure()).hasValueSatisfying(f ->
                        assertThat(f.error()).contains("53100").contains("; retriable"));
                assertThat(dispatcher.health().heldRecords()).as("retriable: retried, not held").isZero();
                assertThat(parked).hasValue(0);
                assertThat(broker.delivered().stream().filter(r -> r.key().equals("p")).toList())
                        .as("the poison key waits").isEmpty();
                long left = PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM outbox");
                assertThat(left + broker.delivered().stream().map(r -> value(r)).distinct().count())
                        .as("every row is in the outbox or delivered (G1)").isGreaterThanOrEqualTo(messages.size() - 1);

                PostgresTestSupport.execute(admin, "DROP TABLE filler"); // the operator frees space
                long freed = System.nanoTime();
                Await.untilOrFail(() -> parked.get() == 1 && store.backlog() == 0, Duration.ofSeconds(30),
                        () -> "the outbox drained after space was freed: " + dispatcher.health());
                System.out.printf("disk full (53100) under a dispatcher: drained %d ms after space was freed%n",
                        (System.nanoTime() - freed) / 1_000_000);
            }
            Map<String, Integer> last = new HashMap<>();
            for (OutboxRecord r : broker.delivered()) {
                String v = value(r);
                int seq = Integer.parseInt(v.substring(v.indexOf('#') + 1));
                Integer before = last.put(r.key(), seq);
                assertThat(before == null ? -1 : before).as("key %s: %s after #%s", r.key(), v, before)
                        .isLessThanOrEqualTo(seq);
            }
            assertThat(broker.delivered().stream().map(r -> value(r)).distinct().count())
                    .as("every good message delivered").isEqualTo(messages.size() - 1);
            assertThat(store.parked(10)).singleElement().satisfies(p -> assertThat(p.key()).isEqualTo("p"));
        }
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }
}
