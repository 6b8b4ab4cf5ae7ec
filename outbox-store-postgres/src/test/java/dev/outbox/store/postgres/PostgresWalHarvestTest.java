package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.internal.StreamStore;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The WAL harvest of {@link PostgresStore} against a real Postgres ({@code wal_level=logical}): the publisher emits
 * logical messages, the store streams them from its slot, and the real dispatcher delivers them — in key order,
 * nothing lost, while the store's connections and its replication connection are killed; bad messages are parked
 * and replayed; a new leader takes the slot over from a deposed one and resumes after what was confirmed.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PostgresWalHarvestTest {
    private static final int KEYS = 20;
    private static final int PER_KEY = 50;
    private static String url;
    private static HikariDataSource storePool;
    private static HikariDataSource appPool;
    private final List<PostgresStore> created = new ArrayList<>();
    /** Each store as a dispatcher harvests it: through the engine's stream harvest, one per store. */
    private final Map<PostgresStore, StreamStore> harvests = new IdentityHashMap<>();

    @BeforeAll
    static void startDatabase() {
        url = PostgresTestSupport.database("outbox_wal");
        storePool = PostgresTestSupport.pool(url, "wal_store", 4);
        appPool = PostgresTestSupport.pool(url, "wal_app", 4);
    }

    @AfterAll
    static void closePools() {
        storePool.close();
        appPool.close();
    }

    @AfterEach
    void dropSlots() {
        for (PostgresStore s : created) {
            h(s).harvestStopped();
            s.dropSlot();
        }
        assertThat(PostgresTestSupport.queryLong(appPool, "SELECT count(*) FROM pg_replication_slots"
                + " WHERE database = current_database()")).as("slots left behind").isZero();
    }

    /** {@code store} as a dispatcher harvests it (the same view on every call). */
    private StreamStore h(PostgresStore store) {
        return harvests.computeIfAbsent(store, s -> (StreamStore) StreamStore.of(s));
    }

    /** A WAL-harvested store of table {@code table}, its replication connections named {@code application}. */
    private PostgresStore store(String table, String application) {
        PostgresStore store = PostgresStore.builder(storePool).table(table).statementTimeout(Duration.ofSeconds(5))
                .walHarvest(PostgresTestSupport.walHarvest(url, application)
                        .takeoverTimeout(Duration.ofSeconds(2))
                        .readWait(Duration.ofMillis(50))
                        .build())
                .build();
        store.createSchema();
        created.add(store);
        return store;
    }

    private static void commit(PostgresStore store, List<OutboxMessage> messages) throws Exception {
        try (Connection c = appPool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, messages);
            c.commit();
        }
    }

    private static String text(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    /**
     * A read with nothing to return waits on the slot for a message, up to the read wait (1 s here, the most
     * allowed); {@code wakeRead} cuts that wait short — the dispatcher calls it when an acknowledgement lets a key's
     * next record go — and a wake-up that comes while no read waits makes the next read return at once. A wake-up is
     * taken once: the read after it waits again. (The woken read is checked against half the read wait, the unwoken
     * one against all of it: the first can only fail if this machine stalls for half a second.)
     */
    @Test
    void aReadWaitingForAMessageIsCutShortByWakeRead() throws Exception {
        PostgresStore store = PostgresStore.builder(storePool).table("wal_wake")
                .walHarvest(PostgresTestSupport.walHarvest(url, "wal_wake")
                        .readWait(Duration.ofSeconds(1))
                        .build())
                .build();
        store.createSchema();
        created.add(store);
        assertThat(h(store).read(0, List.of(), 10).size()).as("opens the stream; nothing committed yet").isZero();

        h(store).wakeRead(); // no read waits now: the next one returns at once
        long started = System.nanoTime();
        assertThat(h(store).read(0, List.of(), 10).size()).isZero();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("the woken read")
                .isLessThan(Duration.ofMillis(500));

        started = System.nanoTime();
        assertThat(h(store).read(0, List.of(), 10).size()).isZero();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).as("the read after it waits the read wait")
                .isGreaterThanOrEqualTo(Duration.ofMillis(990));

        java.util.concurrent.CompletableFuture<ReadResult> waiting = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> h(store).read(0, List.of(), 10));
        Await.untilOrFail(() -> {
            h(store).wakeRead(); // whether it comes before the read waits or while it does, the read returns
            return waiting.isDone();
        }, Duration.ofSeconds(20), () -> "the read still waits after wakeRead");
        assertThat(waiting.get().size()).isZero();

        commit(store, List.of(OutboxMessage.of("orders", "k", "after the wake-up")));
        Await.untilOrFail(() -> h(store).read(0, List.of(), 10).size() == 1, Duration.ofSeconds(30),
                () -> "the message committed after the wake-up was never read");
    }

    @Test
    void everyCommittedMessageIsDeliveredInKeyOrderWhileTheReplicationConnectionIsKilled() throws Exception {
        PostgresStore store = store("wal_dispatch", "wal_stream");
        assertThat(store.harvestsWal()).isTrue();
        assertThat(h(store).readWaits()).isTrue();
        InMemoryBroker broker = new InMemoryBroker();
        DispatcherConfig config = DispatcherConfig.builder()
                .markBatchSize(100)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .build();
        int total = KEYS * PER_KEY;
        int killed = 0;
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("pg-wal").build()) {
            dispatcher.start();
            for (int round = 0; round < PER_KEY; round++) {
                List<OutboxMessage> batch = new ArrayList<>();
                for (int key = 0; key < KEYS; key++) {
                    batch.add(OutboxMessage.of("orders", "key-" + key, "key-" + key + "#" + round));
                }
                commit(store, batch);
                if (round == PER_KEY / 3 || round == 2 * PER_KEY / 3) {
                    int before = broker.deliveredCount();
                    Await.untilOrFail(() -> broker.deliveredCount() > before, Duration.ofSeconds(30),
                            () -> "nothing delivered before the kill");
                    killed += PostgresTestSupport.server().killConnections("wal_stream");
                    PostgresTestSupport.server().killConnections("wal_store");
                }
            }
            Await.untilOrFail(() -> distinct(broker).size() >= total && h(store).backlog() == 0,
                    Duration.ofSeconds(60), () -> "delivered " + distinct(broker).size() + " of " + total
                            + ", pending " + h(store).backlog());
        }
        assertThat(killed).as("replication connections killed").isPositive();

        Map<String, Integer> lastOfKey = new HashMap<>();
        for (OutboxRecord record : broker.delivered()) {
            String value = text(record);
            int sequence = Integer.parseInt(value.substring(value.indexOf('#') + 1));
            Integer last = lastOfKey.put(record.key(), Math.max(sequence, lastOfKey.getOrDefault(record.key(), -1)));
            // A message delivered again after a lost stream repeats a run of its key, never jumps back inside one.
            assertThat(record.messageId()).as("message id of %s", value).isNotNull();
            if (last != null && sequence <= last) {
                assertThat(broker.delivered().stream().filter(r -> text(r).equals(value)).count())
                        .as("key %s: %s after #%s is a redelivery", record.key(), value, last).isGreaterThan(1);
            }
        }
        assertThat(distinct(broker)).hasSize(total);
        assertThat(store.parked(10)).isEmpty();

        // Everything delivered was confirmed: a new stream has nothing to deliver.
        h(store).harvestStopped();
        assertThat(h(store).read(0, List.of(), 100).size()).as("left in the slot").isZero();
    }

    private static Set<String> distinct(InMemoryBroker broker) {
        Set<String> values = new HashSet<>();
        broker.delivered().forEach(r -> values.add(text(r)));
        return values;
    }

    @Test
    void plainSqlWritersEmitThroughTheShippedFunctionAndBadMessagesAreParkedThenReplayed() throws Exception {
        PostgresStore store = store("wal_park", "wal_park_stream");
        UUID id = UUID.fromString("01890a5d-ac96-774b-bcce-b302099a8057");
        PostgresTestSupport.execute(appPool, "SELECT wal_park_emit('orders', 'order-1', convert_to('paid', 'UTF8'),"
                + " ARRAY['trace'], ARRAY[convert_to('t1', 'UTF8')], '" + id + "')");
        PostgresTestSupport.execute(appPool, "SELECT pg_logical_emit_message(true, '" + store.walPrefix()
                + "', '\\x09ff'::bytea)");
        PostgresTestSupport.execute(appPool, "SELECT wal_park_emit('', 'order-2', NULL)"); // an empty topic

        List<OutboxRecord> records = new ArrayList<>();
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        Await.untilOrFail(() -> {
            long after = Math.max(records.isEmpty() ? 0 : records.get(records.size() - 1).id(),
                    rejected.isEmpty() ? 0 : rejected.get(rejected.size() - 1).id());
            ReadResult r = h(store).read(after, List.of(), 10);
            records.addAll(r.rows().records());
            rejected.addAll(r.rows().rejected());
            return records.size() + rejected.size() >= 3;
        }, Duration.ofSeconds(20), () -> "read " + records + " and " + rejected);
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.message().topic()).isEqualTo("orders");
            assertThat(r.key()).isEqualTo("order-1");
            assertThat(text(r)).isEqualTo("paid");
            assertThat(r.message().headers()).singleElement()
                    .satisfies(h -> assertThat(new String(h.value(), StandardCharsets.UTF_8)).isEqualTo("t1"));
            assertThat(r.messageId()).isEqualTo(id);
        });
        assertThat(rejected).hasSize(2);
        assertThat(rejected.get(0).reason()).as("the undecodable message").contains("undecodable WAL message")
                .containsIgnoringCase("version");
        assertThat(rejected.get(1).reason()).as("the empty topic").containsIgnoringCase("topic");

        // Park the good record (as if it failed for good) and the bad ones; the slot moves past all three.
        Map<Long, String> reasons = new HashMap<>();
        reasons.put(records.get(0).id(), "rejected by the broker: too large");
        rejected.forEach(r -> reasons.put(r.id(), r.reason()));
        h(store).park(reasons);
        assertThat(h(store).backlog()).isZero();
        List<ParkedRecord> parked = store.parked(10);
        assertThat(parked).extracting(ParkedRecord::reason)
                .contains("rejected by the broker: too large");
        assertThat(store.parkedCount()).isEqualTo(3);
        h(store).park(reasons); // again (a lost confirmation): nothing changes
        assertThat(store.parkedCount()).isEqualTo(3);

        long goodId = parked.stream().filter(p -> p.key().equals("order-1")).findFirst().orElseThrow().id();
        assertThat(store.replay(List.of(goodId))).isEqualTo(1);
        List<OutboxRecord> replayed = new ArrayList<>();
        Await.untilOrFail(() -> {
            replayed.addAll(h(store).read(records.get(0).id() + 2, List.of(), 10).rows().records());
            return !replayed.isEmpty();
        }, Duration.ofSeconds(20), () -> "the replayed message was not streamed");
        assertThat(replayed).singleElement().satisfies(r -> {
            assertThat(r.key()).isEqualTo("order-1");
            assertThat(r.messageId()).as("replay keeps the message id").isEqualTo(id);
            assertThat(r.attempts()).isZero();
            assertThat(dev.outbox.KeySequence.last(r.message().headers(), dev.outbox.KeySequence.REPLAYED))
                    .as("marked as replayed with its parked id (its former WAL position)")
                    .isEqualTo(dev.outbox.KeySequence.encode(goodId));
        });
        assertThat(store.parkedCount()).isEqualTo(2);
    }

    @Test
    void aNewLeaderTakesTheSlotOverFromADeposedOneAndResumesAfterWhatWasConfirmed() throws Exception {
        PostgresStore deposed = store("wal_takeover", "wal_deposed");
        for (int i = 0; i < 10; i++) {
            commit(deposed, List.of(OutboxMessage.of("orders", "k", "m" + i)));
        }
        List<OutboxRecord> first = new ArrayList<>();
        Await.untilOrFail(() -> {
            first.addAll(h(deposed).read(first.size(), List.of(), 100).rows().records());
            return first.size() >= 10;
        }, Duration.ofSeconds(20), () -> "read " + first.size());
        h(deposed).purge(first.subList(0, 4).stream().map(OutboxRecord::id).toList()); // acknowledged: m0..m3

        // Another instance of the same outbox (the next leader) reads while the deposed one still streams.
        PostgresStore leader = PostgresStore.builder(storePool).table("wal_takeover")
                .walHarvest(PostgresTestSupport.walHarvest(url, "wal_leader")
                        .takeoverTimeout(Duration.ofSeconds(2)).readWait(Duration.ofMillis(50)).build())
                .build();
        long started = System.nanoTime();
        List<OutboxRecord> resumed = new ArrayList<>();
        try {
            Await.untilOrFail(() -> {
                resumed.addAll(h(leader).read(resumed.isEmpty() ? 0 : resumed.get(resumed.size() - 1).id(), List.of(),
                        100).rows().records());
                return resumed.size() >= 6;
            }, Duration.ofSeconds(40), () -> "resumed " + resumed.size());
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("waited for the deposed reader first")
                    .isGreaterThanOrEqualTo(Duration.ofSeconds(2));
            assertThat(resumed).extracting(PostgresWalHarvestTest::text)
                    .containsExactly("m4", "m5", "m6", "m7", "m8", "m9");
            assertThatThrownBy(() -> h(deposed).read(10, List.of(), 10)).as("the deposed stream was terminated")
                    .isInstanceOf(StoreException.class);
            h(deposed).harvestStopped();
        } finally {
            h(leader).harvestStopped();
        }
    }

    @Test
    void aNewLeaderDoesNotSendAgainWhatTheOldOneFinishedAboveTheSlotsPosition() throws Exception {
        PostgresStore old = store("wal_ledger", "wal_ledger_old");
        commit(old, List.of(OutboxMessage.of("orders", "k1", "k1#1")));
        commit(old, List.of(OutboxMessage.of("orders", "k0", "k0#1")));
        commit(old, List.of(OutboxMessage.of("orders", "k0", "k0#2")));
        List<OutboxRecord> read = new ArrayList<>();
        Await.untilOrFail(() -> {
            read.addAll(h(old).read(read.isEmpty() ? 0 : read.get(read.size() - 1).id(), List.of(), 10).rows()
                    .records());
            return read.size() >= 3;
        }, Duration.ofSeconds(20), () -> "read " + read.size());
        h(old).purge(List.of(read.get(1).id(), read.get(2).id())); // k0 delivered; k1#1 still queued
        h(old).harvestStopped(); // leadership moves

        PostgresStore next = PostgresStore.builder(storePool).table("wal_ledger")
                .walHarvest(PostgresTestSupport.walHarvest(url, "wal_ledger").readWait(Duration.ofMillis(50)).build())
                .build();
        List<OutboxRecord> resumed = new ArrayList<>();
        try {
            Await.untilOrFail(() -> {
                resumed.addAll(h(next).read(resumed.isEmpty() ? 0 : resumed.get(resumed.size() - 1).id(), List.of(), 10)
                        .rows().records());
                return !resumed.isEmpty();
            }, Duration.ofSeconds(20), () -> "nothing resumed");
            assertThat(h(next).read(resumed.get(0).id(), List.of(), 10).size()).as("k0 is not sent again").isZero();
            assertThat(resumed).extracting(PostgresWalHarvestTest::text).containsExactly("k1#1");
            assertThat(PostgresTestSupport.queryLong(appPool, "SELECT sum(cardinality(positions)) FROM wal_ledger_wal_ledger"))
                    .as("k0's two records are in the ledger").isEqualTo(2);
            h(next).purge(List.of(resumed.get(0).id()));
        } finally {
            h(next).harvestStopped();
        }
    }

    @Test
    void theWalTheSlotHoldsBackIsReportedAndAMarkHarvestIsRefused() throws Exception {
        PostgresStore store = store("wal_retained", "wal_retained_stream");
        long before = store.retainedBytes().orElseThrow();
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            batch.add(OutboxMessage.of("orders", "k" + (i % 10), "x".repeat(100)));
        }
        commit(store, batch);
        // pg_current_wal_lsn() is where WAL was written to: with synchronous_commit off (the test server's), a moment
        // after the commit.
        Await.untilOrFail(() -> store.retainedBytes().orElseThrow() > before + 100_000, Duration.ofSeconds(10),
                () -> "WAL held back for unread messages: " + store.retainedBytes() + ", before " + before);
        assertThat(PostgresStore.builder(storePool).table("wal_not").build().retainedBytes()).isEmpty();

        assertThatThrownBy(() -> Dispatcher.builder(store, new InMemoryBroker())
                .config(DispatcherConfig.builder().harvest(DispatcherConfig.Harvest.MARK).build()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MARK");
        assertThatThrownBy(() -> store.mark(UUID.randomUUID(), 10)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("CURSOR");
    }

    @Test
    void badWalSettingsAreRefusedNamingTheValue() {
        assertThatThrownBy(() -> WalHarvest.builder("jdbc:mysql://db/app")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("jdbc:mysql://db/app");
        assertThatThrownBy(() -> WalHarvest.builder("jdbc:postgresql://db/app?password=secret"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("secret");
        assertThatThrownBy(() -> WalHarvest.builder(url).slot("Bad-Slot")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Bad-Slot");
        assertThatThrownBy(() -> WalHarvest.builder(url).readWait(Duration.ofSeconds(5)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("readWait");
        assertThat(WalHarvest.builder(url).user("u").password("hunter2").build().toString())
                .doesNotContain("hunter2");
        assertThatThrownBy(() -> PostgresStore.builder(storePool).build().createSlot())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("walHarvest");
    }
}
