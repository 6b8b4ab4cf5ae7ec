package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.BrokerFaults;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.InMemoryLeaderGroup;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * End to end on a real database: application threads commit messages concurrently while two dispatchers, each
 * with its own {@link MySqlStore}, connection pool and broker client, harvest the outbox under an in-memory leader
 * group; the leadership moves twice (an orderly hand-over, then a lost session). Every committed message must
 * arrive, and per key in the order written (a retry may repeat the latest record, never go back).
 *
 * <p>The broker is the test kit's {@link InMemoryBroker} with random ack delays and retriable failures, which
 * exercises resets on the database. Run for MySQL 8 and MariaDB by the subclasses; the same scenario into a real Kafka
 * is {@code MySqlKafkaHarvestTest} in {@code outbox-integration-tests} (this module does not depend on the Kafka
 * adapter, so that the two build side by side).
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
abstract class MySqlHarvestTests {
    private static final Logger log = LoggerFactory.getLogger(MySqlHarvestTests.class);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int WRITERS = 4;
    private static final int KEYS_PER_WRITER = 8;
    private static final int TRANSACTIONS_PER_WRITER = 250;
    private static final String TOPIC = "orders";

    abstract JdbcServer.Kind kind();

    private String suffix() {
        return kind().name().toLowerCase(Locale.ROOT);
    }

    @Test
    void withBrokerFailuresConcurrentWritersAndTwoLeaderChangesDeliverEveryRecordInPerKeyOrder() throws Exception {
        long seed = System.nanoTime();
        InMemoryBroker shared = InMemoryBroker.builder().faults(BrokerFaults.random(seed)
                .delayAcks(Duration.ofMillis(3)).failRetriably(0.005).build()).build();
        try {
            harvest("in-memory", TOPIC, index -> new dev.outbox.spi.SharedMessageBroker(shared), () -> {
                List<Map.Entry<String, String>> delivered = new ArrayList<>();
                for (OutboxRecord r : shared.delivered()) {
                    delivered.add(new AbstractMap.SimpleEntry<>(r.key(),
                            new String(r.message().value(), StandardCharsets.UTF_8)));
                }
                return delivered;
            }, shared::failureCount);
        } finally {
            shared.close(Duration.ofSeconds(5));
        }
    }

    /**
     * The scenario, for brokers made by {@code brokers} (one per dispatcher); {@code delivered} reads back what
     * the broker got, per partition in order, as (key, value) pairs.
     */
    void harvest(String brokerName, String topic, IntFunction<MessageBroker> brokers,
                         Supplier<List<Map.Entry<String, String>>> delivered, Supplier<Long> brokerFailures)
            throws Exception {
        long seed = System.nanoTime();
        String url = MySqlTestSupport.database(kind(), "outbox_harvest_" + suffix());
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        DispatcherConfig config = DispatcherConfig.builder()
                .markBatchSize(100)
                .maxInFlightRecords(400)
                .pollInterval(Duration.ofMillis(20))
                .markBackoff(Duration.ofMillis(2))
                .heartbeatTimeout(Duration.ofMillis(500))
                .ioErrorBackoff(Duration.ofMillis(10))
                .maxIoErrorBackoff(Duration.ofMillis(100))
                .maxAttempts(1_000)
                .drainTimeout(Duration.ofSeconds(10))
                .metricsInterval(Duration.ofSeconds(1))
                .build();
        List<HikariDataSource> pools = new ArrayList<>();
        List<Dispatcher> dispatchers = new ArrayList<>();
        Map<Integer, AtomicInteger> acquired = new ConcurrentHashMap<>();
        AtomicLong acknowledged = new AtomicLong();
        ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
        try (HikariDataSource appPool = MySqlTestSupport.pool(kind(), url, "harvest_app", WRITERS + 1)) {
            MySqlStore schemaOwner = MySqlStore.builder(appPool).build();
            schemaOwner.createSchema();
            for (int i = 0; i < 2; i++) {
                HikariDataSource pool = MySqlTestSupport.pool(kind(), url, "harvest_dispatcher_" + i, 4);
                pools.add(pool);
                int index = i;
                acquired.put(i, new AtomicInteger());
                Dispatcher d = Dispatcher.builder(MySqlStore.builder(pool).build(),
                                new CountingBroker(brokers.apply(i), acknowledged))
                        .config(config)
                        .leaderTransport(group.newMember())
                        .listener(new DispatcherListener() {
                            @Override
                            public void leaderAcquired(UUID leaderId) {
                                acquired.get(index).incrementAndGet();
                            }
                        })
                        .name("harvest-" + suffix() + "-" + i)
                        .build();
                dispatchers.add(d);
                d.start();
            }

            // Each writer owns its keys, so its writes to a key are causally ordered.
            Map<String, List<Integer>> writtenByKey = new ConcurrentHashMap<>();
            List<Future<?>> writing = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                Random random = new Random(seed + w);
                writing.add(writers.submit(() -> {
                    int[] next = new int[KEYS_PER_WRITER];
                    for (int t = 0; t < TRANSACTIONS_PER_WRITER; t++) {
                        List<OutboxMessage> batch = new ArrayList<>();
                        List<int[]> written = new ArrayList<>();
                        for (int m = 1 + random.nextInt(3); m > 0; m--) {
                            int k = random.nextInt(KEYS_PER_WRITER);
                            batch.add(OutboxMessage.of(topic, "w" + writer + "-k" + k, String.valueOf(next[k])));
                            written.add(new int[]{k, next[k]++});
                        }
                        publish(appPool, schemaOwner, batch);
                        for (int[] kv : written) {
                            writtenByKey.computeIfAbsent("w" + writer + "-k" + kv[0], x -> new CopyOnWriteArrayList<>())
                                    .add(kv[1]);
                        }
                    }
                    return null;
                }));
            }

            // An orderly hand-over once a third is delivered, a lost session once two thirds are.
            int expectedAtLeast = WRITERS * TRANSACTIONS_PER_WRITER;
            Await.untilOrFail(() -> acknowledged.get() >= expectedAtLeast / 3, WAIT, acknowledged::toString);
            int first = group.ownerIndex();
            assertThat(group.reassign()).isTrue();
            Await.untilOrFail(() -> group.ownerIndex() >= 0 && group.ownerIndex() != first, WAIT,
                    () -> "no hand-over, owner " + group.ownerIndex());
            Await.untilOrFail(() -> acknowledged.get() >= 2L * expectedAtLeast / 3, WAIT, acknowledged::toString);
            int second = group.ownerIndex();
            Dispatcher lost = dispatchers.get(second);
            assertThat(group.loseOwner()).isTrue();
            Await.untilOrFail(() -> !lost.isLeader() && lost.inFlightRecords() == 0, WAIT,
                    () -> "the old leader still leads or has records in flight: " + lost.inFlightRecords());
            group.assignNext();

            for (Future<?> f : writing) {
                f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            }
            int committed = writtenByKey.values().stream().mapToInt(List::size).sum();
            Await.untilOrFail(() -> schemaOwner.backlog() == 0, WAIT,
                    () -> "outbox not drained: " + schemaOwner.backlog() + " rows left");
            assertThat(schemaOwner.parked(10)).as("nothing parked").isEmpty();

            List<Map.Entry<String, String>> received = delivered.get();
            Map<String, List<Integer>> deliveredByKey = new HashMap<>();
            for (Map.Entry<String, String> r : received) {
                deliveredByKey.computeIfAbsent(r.getKey(), k -> new ArrayList<>()).add(Integer.parseInt(r.getValue()));
            }
            String summary = String.format(Locale.ROOT, "%s into %s: %d committed, %d delivered (%d duplicates),"
                            + " %d broker failures, leadership acquired %s (seed %d)", kind(), brokerName, committed,
                    received.size(), received.size() - committed, brokerFailures.get(), acquired, seed);
            log.info(summary);
            System.out.println(summary);
            assertThat(deliveredByKey.keySet()).as(summary).isEqualTo(writtenByKey.keySet());
            for (Map.Entry<String, List<Integer>> e : writtenByKey.entrySet()) {
                List<Integer> seen = deliveredByKey.get(e.getKey());
                assertThat(seen).as("key %s, %s", e.getKey(), summary).isSorted();
                assertThat(Set.copyOf(seen)).as("key %s: every record delivered, %s", e.getKey(), summary)
                        .isEqualTo(Set.copyOf(e.getValue()));
            }
            assertThat(acquired.get(0).get() + acquired.get(1).get()).as("leadership changed")
                    .isGreaterThanOrEqualTo(3);
            assertThat(acquired.get(0).get()).as("both dispatchers led").isPositive();
            assertThat(acquired.get(1).get()).as("both dispatchers led").isPositive();
        } catch (AssertionError e) {
            throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        } finally {
            writers.shutdownNow();
            dispatchers.forEach(Dispatcher::close);
            pools.forEach(HikariDataSource::close);
        }
    }

    private static void publish(HikariDataSource pool, MySqlStore store, List<OutboxMessage> batch) {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, batch);
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }


    /** Counts acknowledged sends, to move the leadership at known points of progress. */
    private static final class CountingBroker implements MessageBroker {
        private final MessageBroker delegate;
        private final AtomicLong acknowledged;

        CountingBroker(MessageBroker delegate, AtomicLong acknowledged) {
            this.delegate = delegate;
            this.acknowledged = acknowledged;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            return delegate.send(record).whenComplete((ok, error) -> {
                if (error == null) {
                    acknowledged.incrementAndGet();
                }
            });
        }

        @Override
        public boolean flush(Duration timeout) {
            return delegate.flush(timeout);
        }

        @Override
        public void sendPending() {
            delegate.sendPending();
        }

        @Override
        public void close(Duration timeout) {
            delegate.close(timeout);
        }
    }
}
