package dev.outbox.benchmarks.engineab;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.Publisher;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

// The drain of EngineOnlyDrain (src/main/java) against the store port before its split into capabilities (#43,
// before commit 0f3da9c): ./bench.sh engine-ab compiles this file for such revisions. Not compiled by Maven.
/**
 * One drain of the engine alone, for {@link EngineAB}: a fresh {@link Dispatcher} (cursor harvest, the benchmark's
 * drain settings) over a store that holds its rows in memory and a broker that acknowledges every send on one
 * thread of its own, as a Kafka producer's I/O thread would; so that what is measured is the engine's own work per
 * record (the harvest, the per-key schedule, the sends, the settle), without a database or a broker.
 *
 * <p>Written against this revision's ports. {@code ./bench.sh engine-ab} compiles this same source against each
 * revision it compares (and {@code engine-ab/store-port-v1/} for revisions before the store port's split, #43), so
 * it must use nothing but outbox-core and the JDK.
 */
public final class EngineOnlyDrain implements Function<Integer, long[]> {

    /** Creates the drain; {@link EngineAB} loads it by name. */
    public EngineOnlyDrain() {
    }

    /**
     * Drains {@code records} records (10,000 keys, 100-byte values) through a fresh dispatcher.
     *
     * @param records how many records to drain
     * @return the drain's wall time and this process's CPU time during it, in nanoseconds
     */
    @Override
    public long[] apply(Integer records) {
        ConcurrentSkipListMap<Long, OutboxRecord> rows = new ConcurrentSkipListMap<>();
        Random random = new Random(42);
        Instant now = Instant.now();
        byte[] value = new byte[100];
        for (long id = 1; id <= records; id++) {
            random.nextBytes(value);
            rows.put(id, new OutboxRecord(id, now, OutboxMessage.of("bench", "key-" + random.nextInt(10_000),
                    value.clone()), 0, null));
        }
        CountDownLatch empty = new CountDownLatch(1);
        ExecutorService acks = Executors.newSingleThreadExecutor();
        DispatcherConfig config = DispatcherConfig.builder().markBatchSize(1000).maxInFlightRecords(10_000)
                .purgeBatchSize(5000).build();
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpu0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        Dispatcher dispatcher = Dispatcher.builder(new MemoryStore(rows, empty), new AckingBroker(acks))
                .config(config).name("engine-ab").build();
        dispatcher.start();
        try {
            if (!empty.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not drained in 120 s: " + rows.size() + " rows left");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        long wall = System.nanoTime() - t0;
        long cpu = os.getProcessCpuTime() - cpu0;
        dispatcher.close();
        acks.shutdown();
        return new long[] {wall, cpu};
    }

    /** Acknowledges every send on its executor's thread. */
    private static final class AckingBroker implements MessageBroker {
        private final ExecutorService acks;

        AckingBroker(ExecutorService acks) {
            this.acks = acks;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            CompletableFuture<Void> sent = new CompletableFuture<>();
            acks.execute(() -> sent.complete(null));
            return sent;
        }

        @Override
        public boolean flush(Duration timeout) {
            return true;
        }

        @Override
        public void close(Duration timeout) {
        }
    }

    /** Rows in memory, read by cursor, every id committed (no gaps); the latch opens when the last is purged. */
    private static final class MemoryStore implements Store {
        private final ConcurrentSkipListMap<Long, OutboxRecord> rows;
        private final CountDownLatch empty;

        MemoryStore(ConcurrentSkipListMap<Long, OutboxRecord> rows, CountDownLatch empty) {
            this.rows = rows;
            this.empty = empty;
        }

        @Override
        public Publisher publisher() {
            throw new UnsupportedOperationException("the engine-only drain has no writers");
        }

        @Override
        public ReadResult read(long after, List<IdRange> recheck, int limit) {
            List<OutboxRecord> out = new ArrayList<>(Math.min(limit, 4096));
            for (OutboxRecord r : rows.tailMap(after, false).values()) {
                if (out.size() >= limit) {
                    break;
                }
                out.add(r);
            }
            return ReadResult.of(out, 0, Long.MAX_VALUE);
        }

        @Override
        public void purge(Collection<Long> ids) {
            ids.forEach(rows::remove);
            if (rows.isEmpty()) {
                empty.countDown();
            }
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
        }

        @Override
        public boolean supportsMark() {
            return false;
        }

        @Override
        public boolean supportsRead() {
            return true;
        }

        @Override
        public MarkResult mark(UUID leaderId, int limit) {
            throw new UnsupportedOperationException("read by cursor");
        }

        @Override
        public void reset(UUID leaderId, Collection<Long> ids) {
        }

        @Override
        public List<ParkedRecord> parked(int limit) {
            return List.of();
        }

        @Override
        public int replay(Collection<Long> ids) {
            return 0;
        }

        @Override
        public long backlog() {
            return rows.size();
        }

        @Override
        public long parkedCount() {
            return 0;
        }

        @Override
        public Optional<Instant> oldestCreateTime() {
            return Optional.empty();
        }

        @Override
        public void park(Map<Long, String> reasons) {
            throw new IllegalStateException("nothing should be parked: " + reasons);
        }
    }
}
