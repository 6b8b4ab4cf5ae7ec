package dev.outbox.store.postgres;


import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.BrokerFaults;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A park that the database refuses for good, under a running dispatcher on the real Postgres server: the
 * dispatcher's role loses its INSERT privilege on the parked table (SQLSTATE 42501), and later a row's id already
 * sits in the parked table because the id sequence was reset (23505). Each time a poison record (failing
 * permanently at the broker) sits among good records of other keys: the good records are all delivered and purged,
 * the poison record's row stays and its key is held (its later record waits), health reports the held record and
 * the failure, reported once however often the park is retried; once the operator removes the cause (GRANT, or the
 * stale parked row discarded), the poison row is parked and its key moves on. Asserts G1 (every good record
 * delivered), per-key order and that nothing but the poison rows is parked.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class PostgresRefusedParkTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String ROLE = "refused_dispatcher";
    private static final int KEYS = 8;

    @Test
    void aRefusedParkHoldsOnlyThePoisonKeyAndIsReportedOnce() throws Exception {
        String url = PostgresTestSupport.database("outbox_refused_park");
        DataSource admin = PostgresTestSupport.admin(url);
        PostgresStore adminStore = PostgresStore.builder(admin).build();
        adminStore.createSchema();
        // A dispatcher role with what the harvest needs, and no more: not a superuser, which bypasses privileges.
        PostgresTestSupport.execute(admin, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + ROLE
                + "') THEN CREATE ROLE " + ROLE + " LOGIN PASSWORD 'refused'; END IF; END $$");
        PostgresTestSupport.execute(admin, "GRANT SELECT, INSERT, UPDATE, DELETE ON outbox, outbox_parked, outbox_leader TO " + ROLE);
        PostgresTestSupport.execute(admin, "REVOKE INSERT ON outbox_parked FROM " + ROLE);

        InMemoryBroker broker = InMemoryBroker.builder().faults(record -> value(record).startsWith("poison")
                ? BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_PERMANENT) : BrokerFaults.Fault.ACK).build();
        Events events = new Events();
        DispatcherConfig config = DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .ioErrorBackoff(Duration.ofMillis(20))
                .maxIoErrorBackoff(Duration.ofMillis(200))
                .rescanInterval(Duration.ofMillis(200))
                .drainTimeout(Duration.ofSeconds(1))
                .build();
        try (HikariDataSource pool = new HikariDataSource(Jdbc.poolConfig(url, ROLE, "refused", 3, "pool-refused"))) {
            ParkCountingStore store = new ParkCountingStore(PostgresStore.builder(pool)
                    .statementTimeout(Duration.ofSeconds(5)).build());
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).listener(events)
                    .name("refused").build()) {
                dispatcher.start();

                // --- no INSERT privilege on the parked table
                write(admin, adminStore, 0, 10, 5, "p");
                long poisonId = idOf(admin, "poison-p");
                Await.untilOrFail(() -> dispatcher.health().heldRecords() == 1 && deliveredGood(broker) == KEYS * 10,
                        WAIT, () -> "the good records delivered and the poison one held: " + dispatcher.health()
                                + ", delivered " + deliveredGood(broker));
                // Other keys keep flowing while the poison key is held; the park is retried meanwhile.
                int parksBefore = store.parks.get();
                write(admin, adminStore, 10, 20, -1);
                Await.untilOrFail(() -> deliveredGood(broker) == KEYS * 20 && store.parks.get() >= parksBefore + 3,
                        WAIT, () -> "delivered " + deliveredGood(broker) + ", parks " + store.parks.get());
                assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM outbox"))
                        .as("the poison row and the record behind it on its key stay").isEqualTo(2);
                assertThat(delivered(broker, "p")).as("key p is held behind its poison record").isEmpty();
                assertThat(dispatcher.health().lastFailure()).hasValueSatisfying(f -> {
                    assertThat(f.operation()).isEqualTo("park");
                    assertThat(f.error()).contains("42501").contains("not retriable");
                });
                assertThat(events.failures).as("reported once, not every retry").containsEntry("park", 1);
                assertThat(events.parked).isEmpty();

                PostgresTestSupport.execute(admin, "GRANT INSERT ON outbox_parked TO " + ROLE);
                long granted = System.nanoTime();
                Await.untilOrFail(() -> dispatcher.health().heldRecords() == 0 && delivered(broker, "p").size() == 1
                                && events.parked.size() == 1, WAIT,
                        () -> "the poison row parked after the GRANT: " + dispatcher.health());
                System.out.printf("refused park (42501): parked %d ms after the GRANT%n",
                        (System.nanoTime() - granted) / 1_000_000);
                assertThat(events.parked.get(0).id()).isEqualTo(poisonId);

                // --- a duplicate id: the sequence reset below an id the parked table holds
                PostgresTestSupport.execute(admin,
                        "SELECT setval(pg_get_serial_sequence('outbox', 'id'), " + poisonId + ", false)");
                // Two poison records, likely parked in one batch: only the one with the duplicate id is held.
                write(admin, adminStore, 20, 25, 20, "q", "r");
                assertThat(idOf(admin, "poison-q")).as("the new poison row took the parked row's id")
                        .isEqualTo(poisonId);
                Await.untilOrFail(() -> dispatcher.health().heldRecords() == 1 && deliveredGood(broker) == KEYS * 25
                                && events.parked.size() == 2 && delivered(broker, "r").size() == 1, WAIT,
                        () -> "the good records delivered, poison r parked and poison q held: " + dispatcher.health()
                                + ", delivered " + deliveredGood(broker) + ", parked " + events.parked);
                assertThat(events.parked.get(1).key()).isEqualTo("r");
                // Not health().lastFailure(): poison r's send failure may come after q's refused park.
                assertThat(events.storeErrors).anySatisfy(e ->
                        assertThat(e).contains("23505").contains("not retriable"));
                assertThat(delivered(broker, "q")).as("key q is held behind its poison record").isEmpty();
                assertThat(events.failures).containsEntry("park", 2);

                adminStore.discard(List.of(poisonId)); // the operator discards the stale parked row
                long discarded = System.nanoTime();
                Await.untilOrFail(() -> dispatcher.health().heldRecords() == 0 && delivered(broker, "q").size() == 1
                        && events.parked.size() == 3, WAIT, () -> "the poison row parked: " + dispatcher.health());
                System.out.printf("refused park (23505): parked %d ms after the stale row was discarded%n",
                        (System.nanoTime() - discarded) / 1_000_000);
                Await.untilOrFail(() -> adminStore.backlog() == 0, WAIT, () -> "backlog " + adminStore.backlog());
            }
        }
        assertInKeyOrder(broker);
        assertThat(adminStore.parked(10)).extracting(ParkedRecord::key).containsExactly("q", "r");
        assertThat(events.failures.keySet()).containsOnly("park");
    }

    /**
     * Writes rounds {@code from} … {@code to - 1} of every key; for each of {@code poisonKeys}, a poison record and
     * one record behind it on that key, before round {@code poisonAt}.
     */
    private static void write(DataSource admin, PostgresStore store, int from, int to, int poisonAt,
                              String... poisonKeys) throws Exception {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int round = from; round < to; round++) {
            for (String poisonKey : round == poisonAt ? poisonKeys : new String[0]) {
                batch.add(OutboxMessage.of("orders", poisonKey, "poison-" + poisonKey));
                batch.add(OutboxMessage.of("orders", poisonKey, poisonKey + "#1"));
            }
            for (int key = 0; key < KEYS; key++) {
                batch.add(OutboxMessage.of("orders", "key-" + key, "key-" + key + "#" + round));
            }
        }
        Publisher publisher = store.publisher();
        try (Connection c = admin.getConnection()) {
            publisher.publish(c, batch);
        }
    }

    private static long idOf(DataSource admin, String value) {
        return PostgresTestSupport.queryLong(admin, "SELECT id FROM outbox WHERE value = convert_to('" + value
                + "', 'UTF8')");
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    private static int deliveredGood(InMemoryBroker broker) {
        // Distinct values, not ids: ids repeat here after the sequence reset.
        return (int) broker.delivered().stream().filter(r -> r.key().startsWith("key-")).map(r -> value(r))
                .distinct().count();
    }

    private static List<OutboxRecord> delivered(InMemoryBroker broker, String key) {
        return broker.delivered().stream().filter(r -> r.key().equals(key)).toList();
    }

    /** Per key, a consumer never sees an older record after a newer one (ids are not monotonic: sequence reset). */
    private static void assertInKeyOrder(InMemoryBroker broker) {
        Map<String, Integer> last = new HashMap<>();
        for (OutboxRecord r : broker.delivered()) {
            if (!r.key().startsWith("key-")) {
                continue;
            }
            String v = value(r);
            int round = Integer.parseInt(v.substring(v.indexOf('#') + 1));
            Integer before = last.put(r.key(), round);
            assertThat(before == null ? -1 : before).as("key %s: %s after #%s", r.key(), v, before)
                    .isLessThanOrEqualTo(round);
        }
        assertThat(last).hasSize(KEYS).allSatisfy((k, round) -> assertThat(round).as(k).isEqualTo(24));
    }

    private static final class Events implements DispatcherListener {
        final Map<String, Integer> failures = new ConcurrentHashMap<>();
        final List<ParkedRecord> parked = new CopyOnWriteArrayList<>();
        final List<String> storeErrors = new CopyOnWriteArrayList<>();

        @Override
        public void failure(String operation, Throwable error) {
            if (!(error instanceof StoreException)) {
                return; // a send failure of the poison record: not what is counted here
            }
            failures.merge(operation, 1, Integer::sum);
            storeErrors.add(error.getMessage());
        }

        @Override
        public void recordParked(ParkedRecord record) {
            parked.add(record);
        }
    }

    /** The real store, counting the park calls the dispatcher makes (so that the test knows it retried). */
    private static final class ParkCountingStore implements Store {
        private final Store store;
        final AtomicInteger parks = new AtomicInteger();

        ParkCountingStore(Store store) {
            this.store = store;
        }

        @Override
        public Publisher publisher() {
            return store.publisher();
        }

        @Override
        public void purge(Collection<Long> ids) {
            store.purge(ids);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            store.retryLater(nextAttempts);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            parks.incrementAndGet();
            store.park(reasons);
        }

        /**
         * The store's capabilities but storage fencing: the dispatcher's parks must come through this wrapper (a
         * fencing store's writes would go through its own fenced view).
         */
        @Override
        public <T> Optional<T> capability(Class<T> type) {
            return type == StorageFencing.class ? Optional.empty() : store.capability(type);
        }
    }
}
