package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.Store;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The references the Dispatcher's drains are judged against: the database's ceiling (mark or read and purge, no
 * broker), the cursor read's and the WAL harvest's ceilings, the broker's ceiling (a bare producer) and the naive
 * baseline (one row at a time). Not thread-safe: one scenario at a time.
 */
final class CeilingScenarios {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Backlog backlog;

    CeilingScenarios(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
        this.backlog = new Backlog(env, options);
    }

    /**
     * The ceiling of the WAL harvest: the WAL store's own {@code read} (its replication stream, decoded) and
     * {@code purge} (which confirms the slot as far as everything before is finished) take {@code rows} messages
     * emitted into the WAL with no broker, pipelined like {@link #cursorCeiling}. Timed from the first read (which
     * opens the stream) to the last purge.
     */
    ThroughputScenarios.Run walCeiling(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("wal-ceiling");
        double fill = backlog.fillWal(topic, rows, seed);
        TimingStore store = new TimingStore(env.database().walStore(), false);
        DispatcherConfig config = env.dispatcherConfig();
        Semaphore room = new Semaphore(config.maxInFlightRecords());
        BlockingQueue<List<Long>> read = new ArrayBlockingQueue<>(config.maxInFlightRecords());
        AtomicLong purged = new AtomicLong();
        AtomicLong firstMessage = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(1);
        long started = System.nanoTime();
        long deadline = started + options.timeout.toNanos();
        Thread readThread = new Thread(() -> {
            long cursor = 0;
            long total = 0;
            try {
                while (total < rows && System.nanoTime() - deadline < 0) {
                    room.acquire(config.markBatchSize());
                    int limit = config.markBatchSize() + room.drainPermits();
                    List<Long> ids = new ArrayList<>(limit);
                    ReadResult result = store.read(cursor, List.of(), limit);
                    for (OutboxRecord r : result.rows().records()) {
                        ids.add(r.id());
                    }
                    for (MarkResult.Rejected r : result.rows().rejected()) {
                        ids.add(r.id());
                    }
                    room.release(limit - ids.size());
                    if (ids.isEmpty()) {
                        continue; // the stream is still opening, or the server is still decoding
                    }
                    firstMessage.compareAndSet(0, System.nanoTime());
                    ids.sort(null);
                    cursor = ids.get(ids.size() - 1);
                    total += ids.size();
                    read.put(ids);
                }
                read.put(List.of());
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
                finished.countDown();
            }
        }, "bench-wal-read");
        Thread purgeThread = purger("bench-wal-purge", read, store, config, room, purged, failure, finished);
        readThread.setDaemon(true);
        purgeThread.setDaemon(true);
        readThread.start();
        purgeThread.start();
        boolean done = finished.await(options.timeout.toSeconds() + 10, TimeUnit.SECONDS);
        long end = System.nanoTime();
        readThread.interrupt();
        purgeThread.interrupt();
        readThread.join(10_000);
        purgeThread.join(10_000);
        if (failure.get() != null) {
            throw new IllegalStateException("WAL ceiling failed: " + failure.get(), failure.get());
        }
        if (!done || purged.get() < rows) {
            Progress.say("WAL ceiling timed out after %s with %,d of %,d messages", options.timeout, purged.get(),
                    rows);
        }
        double seconds = (end - started) / 1e9;
        store.harvestStopped(); // closes the stream: the slot is free for walLeft's count
        String breakdown = store.summary(seconds) + (firstMessage.get() == 0 ? ""
                : Report.fmt("; first message read %.0f ms after the first read began",
                (firstMessage.get() - started) / 1e6));
        return new ThroughputScenarios.Run("wal-ceiling", purged.get(), seconds, ThroughputScenarios.walLeft(env), fill, breakdown);
    }

    /**
     * The ceiling of the cursor harvest: the store's own {@code read} above a cursor kept in memory (no recheck
     * ranges: a quiet backlog has no gaps) and its batched {@code purge} drain the backlog with no broker, pipelined
     * as the Dispatcher does it (reading on one thread, purging on another, at most {@code maxInFlightRecords} rows
     * read and not yet purged, each read as large as the room allows).
     */
    ThroughputScenarios.Run cursorCeiling(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("cursor");
        double fill = backlog.fill(topic, rows, seed);
        TimingStore store = new TimingStore(env.store(), false);
        DispatcherConfig config = env.dispatcherConfig();
        Semaphore room = new Semaphore(config.maxInFlightRecords());
        BlockingQueue<List<Long>> read = new ArrayBlockingQueue<>(config.maxInFlightRecords());
        AtomicLong purged = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(1);
        CpuMeter cpu = new CpuMeter(ServerCpu.of(env.database()));
        long started = System.nanoTime();
        Thread readThread = new Thread(() -> {
            long cursor = 0;
            try {
                while (true) {
                    room.acquire(config.markBatchSize());
                    int limit = config.markBatchSize() + room.drainPermits(); // all the room there is, as the engine
                    List<Long> ids = new ArrayList<>(limit);
                    for (OutboxRecord r : store.read(cursor, List.of(), limit).rows().records()) {
                        ids.add(r.id());
                    }
                    room.release(limit - ids.size());
                    if (ids.isEmpty()) {
                        read.put(List.of());
                        return;
                    }
                    cursor = ids.get(ids.size() - 1);
                    read.put(ids);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
                finished.countDown();
            }
        }, "bench-cursor-read");
        Thread purgeThread = purger("bench-cursor-purge", read, store, config, room, purged, failure, finished);
        readThread.setDaemon(true);
        purgeThread.setDaemon(true);
        readThread.start();
        purgeThread.start();
        boolean done = finished.await(options.timeout.toSeconds(), TimeUnit.SECONDS);
        long end = System.nanoTime();
        readThread.interrupt();
        purgeThread.interrupt();
        readThread.join(10_000);
        purgeThread.join(10_000);
        if (failure.get() != null) {
            throw new IllegalStateException("cursor ceiling failed: " + failure.get(), failure.get());
        }
        if (!done) {
            Progress.say("cursor ceiling timed out after %s", options.timeout);
        }
        double seconds = (end - started) / 1e9;
        String cpuUsed = cpu.describe(purged.get());
        return new ThroughputScenarios.Run("cursor", purged.get(), seconds, backlog.count(), fill, store.summary(seconds) + "; "
                + cpuUsed);
    }

    /**
     * The deleting half of a pipelined ceiling: takes batches of ids from {@code ids} (an empty one ends it), purges
     * them in batches of {@code purgeBatchSize} and gives their room back.
     */
    private static Thread purger(String name, BlockingQueue<List<Long>> ids, Store store, DispatcherConfig config,
                                 Semaphore room, AtomicLong purged, AtomicReference<Throwable> failure,
                                 CountDownLatch finished) {
        Thread t = new Thread(() -> {
            try {
                List<Long> batch = new ArrayList<>();
                List<List<Long>> taken = new ArrayList<>();
                boolean end = false;
                while (!end) {
                    taken.clear();
                    taken.add(ids.take());
                    ids.drainTo(taken);
                    batch.clear();
                    for (List<Long> some : taken) {
                        if (some.isEmpty()) {
                            end = true;
                        }
                        batch.addAll(some);
                    }
                    for (int from = 0; from < batch.size(); from += config.purgeBatchSize()) {
                        List<Long> part = batch.subList(from, Math.min(batch.size(), from + config.purgeBatchSize()));
                        store.purge(part);
                        room.release(part.size());
                        purged.addAndGet(part.size());
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            } finally {
                finished.countDown();
            }
        }, name);
        return t;
    }

    ThroughputScenarios.Run databaseCeiling(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("database");
        double fill = backlog.fill(topic, rows, seed);
        TimingStore store = new TimingStore(env.store(), false);
        DispatcherConfig config = env.dispatcherConfig();
        Semaphore room = new Semaphore(config.maxInFlightRecords());
        BlockingQueue<List<Long>> marked = new ArrayBlockingQueue<>(config.maxInFlightRecords());
        AtomicLong purged = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(1);
        UUID leader = UUID.randomUUID();
        long started = System.nanoTime();
        Thread markThread = new Thread(() -> {
            try {
                while (true) {
                    room.acquire(config.markBatchSize());
                    MarkResult result = store.mark(leader, config.markBatchSize());
                    room.release(config.markBatchSize() - result.size());
                    if (result.isEmpty()) {
                        marked.put(List.of());
                        return;
                    }
                    List<Long> ids = new ArrayList<>(result.size());
                    for (OutboxRecord r : result.records()) {
                        ids.add(r.id());
                    }
                    marked.put(ids);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
                finished.countDown();
            }
        }, "bench-db-mark");
        Thread purgeThread = purger("bench-db-purge", marked, store, config, room, purged, failure, finished);
        markThread.setDaemon(true);
        purgeThread.setDaemon(true);
        markThread.start();
        purgeThread.start();
        boolean done = finished.await(options.timeout.toSeconds(), TimeUnit.SECONDS);
        long end = System.nanoTime();
        markThread.interrupt();
        purgeThread.interrupt();
        markThread.join(10_000);
        purgeThread.join(10_000);
        if (failure.get() != null) {
            throw new IllegalStateException("database ceiling failed: " + failure.get(), failure.get());
        }
        if (!done) {
            Progress.say("database ceiling timed out after %s", options.timeout);
        }
        double seconds = (end - started) / 1e9;
        return new ThroughputScenarios.Run("database", purged.get(), seconds, backlog.count(), fill, store.summary(seconds));
    }

    /**
     * Kafka alone: a bare {@link KafkaProducer} with the Dispatcher's producer properties sends {@code rows}
     * records of the same shape (keys out of --keys, values of --value-bytes) as fast as it accepts them, with at
     * most 5 x --max-in-flight records unacknowledged (unbounded, the producer buffers ~200,000 records, and on a
     * starved machine requests time out and idempotent retries fail with out-of-order sequence numbers); timed
     * from the first send to the last acknowledgement.
     */
    ThroughputScenarios.Run brokerCeiling(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("broker");
        Map<String, Object> props = env.producerProperties();
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-broker-ceiling");
        String[] keys = Backlog.keys(options.keys);
        SplittableRandom random = new SplittableRandom(seed);
        byte[][] values = new byte[1024][options.valueBytes];
        for (byte[] v : values) {
            random.nextBytes(v);
        }
        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong lastAck = new AtomicLong();
        CountDownLatch all = new CountDownLatch(1);
        Semaphore window = new Semaphore(5 * options.maxInFlightRecords);
        CpuMeter cpu;
        String cpuUsed;
        long started;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props, new StringSerializer(),
                new ByteArraySerializer())) {
            producer.partitionsFor(topic); // metadata first, as the Dispatcher's producer has it after one send
            cpu = new CpuMeter(null);
            started = System.nanoTime();
            for (int i = 0; i < rows; i++) {
                window.acquire();
                producer.send(new ProducerRecord<>(topic, keys[random.nextInt(keys.length)], values[i & 1023]),
                        (md, e) -> {
                            window.release();
                            if (e != null) {
                                failed.incrementAndGet();
                            } else {
                                lastAck.accumulateAndGet(System.nanoTime(), Math::max);
                            }
                            if (acked.incrementAndGet() == rows) {
                                all.countDown();
                            }
                        });
            }
            if (!all.await(options.timeout.toSeconds(), TimeUnit.SECONDS)) {
                Progress.say("broker ceiling timed out after %s", options.timeout);
            }
            cpuUsed = cpu.describe(acked.get()); // before close(), which waits for nothing but costs CPU
        }
        if (failed.get() > 0) {
            Progress.say("broker ceiling: %d sends failed", failed.get());
        }
        return new ThroughputScenarios.Run("broker", acked.get() - failed.get(), (lastAck.get() - started) / 1e9, -1, 0,
                (failed.get() == 0 ? "" : failed.get() + " sends failed; ") + cpuUsed);
    }

    /**
     * The reference implementation's pattern, one row at a time: mark one row, send it and wait for the
     * acknowledgement, delete it; each a statement and a commit of its own. The producer lingers 0 ms (the
     * benchmark's producer waits linger.ms for a batch that never comes when sends are synchronous). Stops
     * after --naive-seconds even if rows are left: its rate is what matters.
     */
    ThroughputScenarios.Run naive(int rows, long seed) throws Exception {
        String topic = env.newTopic("naive");
        double fill = backlog.fill(topic, rows, seed);
        Store store = env.store();
        Map<String, Object> props = env.producerProperties();
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-naive");
        UUID leader = UUID.randomUUID();
        long moved = 0;
        long markNanos = 0;
        long sendNanos = 0;
        long purgeNanos = 0;
        long started;
        long ended;
        long deadline = System.nanoTime() + Math.min(options.timeout.toNanos(), options.naiveTime.toNanos());
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().properties(props).build()) {
            started = System.nanoTime();
            while (System.nanoTime() - deadline < 0) {
                long t0 = System.nanoTime();
                MarkResult result = dev.outbox.spi.Store.require(store, dev.outbox.spi.MarkHarvest.class, "the benchmark").mark(leader, 1);
                if (result.isEmpty()) {
                    break;
                }
                OutboxRecord r = result.records().get(0);
                long t1 = System.nanoTime();
                broker.send(r).toCompletableFuture().get(options.timeout.toSeconds(), TimeUnit.SECONDS);
                long t2 = System.nanoTime();
                store.purge(List.of(r.id()));
                long t3 = System.nanoTime();
                markNanos += t1 - t0;
                sendNanos += t2 - t1;
                purgeNanos += t3 - t2;
                moved++;
            }
            ended = System.nanoTime();
        }
        double seconds = (ended - started) / 1e9;
        long n = Math.max(1, moved);
        String breakdown = Report.fmt("per row: mark %.2f ms, send and wait for the ack %.2f ms, purge %.2f ms",
                markNanos / 1e6 / n, sendNanos / 1e6 / n, purgeNanos / 1e6 / n);
        return new ThroughputScenarios.Run("naive", moved, seconds, backlog.count(), fill, breakdown);
    }
}
