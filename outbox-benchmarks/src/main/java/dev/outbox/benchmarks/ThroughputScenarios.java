package dev.outbox.benchmarks;


import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ReadResult;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.spi.Store;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;


import java.time.Duration;
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
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The drain of a pre-filled backlog by the Dispatcher, and the three references it is judged against: the
 * database ceiling, the broker ceiling and the naive baseline. Not thread-safe: one scenario at a time.
 */
final class ThroughputScenarios {
    /** The throughput scenarios, in the order they run and are reported. */
    static final List<String> NAMES = List.of("drain", "drain-txn", "drain-unfenced", "drain-mark", "drain-nopurge", "drain-wal",
            "drain-shards", "drain-shards-2", "database", "cursor", "wal-ceiling", "broker", "naive");

    /** One measured run: {@code records} moved in {@code seconds}, {@code left} rows remaining after it. */
    record Run(String scenario, long records, double seconds, long left, double fillSeconds, String breakdown) {
        double rate() {
            return seconds <= 0 ? 0 : records / seconds;
        }
    }

    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Backlog backlog;

    ThroughputScenarios(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
        this.backlog = new Backlog(env, options);
    }

    /**
     * The Dispatcher (single instance, throughput configuration) harvests a backlog of {@code rows} into Kafka;
     * timed from its first send to its last acknowledgement. Rows left are counted after it closed.
     */
    Run drain(int rows, long seed) throws InterruptedException {
        return drain("drain", rows, seed, null, d -> { });
    }

    /**
     * The same drain with storage fencing off (the store's writes unchecked, as before fencing), labelled
     * {@code drain-unfenced}: next to {@code drain} it gives the cost of fencing.
     */
    Run drainUnfenced(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain");
        double fill = backlog.fill(topic, rows, seed, null, 0);
        return deliver("drain-unfenced", rows, fill, env.store(), DispatcherConfig.Harvest.CURSOR, d -> { },
                backlog::count, false, false);
    }

    /**
     * The same drain publishing with Kafka's transactional producer ({@code KafkaMessageBroker.Builder#transactionalId}),
     * labelled {@code drain-txn}: next to {@code drain} it gives the cost of broker fencing.
     */
    Run drainTransactional(int rows, long seed) throws InterruptedException {
        env.transactionalBrokers("bench-txn");
        try {
            return drain("drain-txn", rows, seed, null, d -> { });
        } finally {
            env.transactionalBrokers(null);
        }
    }

    /** The same drain with the mark harvest ({@link DispatcherConfig.Harvest#MARK}), labelled {@code drain-mark}. */
    Run drainByMark(int rows, long seed) throws InterruptedException {
        return drain("drain-mark", rows, seed, null, d -> { }, DispatcherConfig.Harvest.MARK);
    }

    /**
     * The cursor drain with every purge skipped ({@code drain-nopurge}): the rows stay in the table, the Dispatcher
     * goes on as if they had been deleted. Not a mode anyone should run; an upper bound on what a cheaper purge could
     * give the drain on this machine.
     */
    Run drainWithoutPurge(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain");
        double fill = backlog.fill(topic, rows, seed, null, 0);
        return deliver("drain-nopurge", rows, fill, env.store(), DispatcherConfig.Harvest.CURSOR, d -> { },
                backlog::count, true, true);
    }

    /**
     * The same drain, labelled {@code scenario}, every row carrying {@code header} (none if null), with
     * {@code instrument} applied once the backlog is filled and the dispatcher built, before it starts (to bind
     * meters or add observers).
     */
    Run drain(String scenario, int rows, long seed, dev.outbox.Header header, Consumer<Dispatcher> instrument)
            throws InterruptedException {
        return drain(scenario, rows, seed, header, 0, instrument);
    }

    /** As above, each row's value {@code extraValueBytes} longer than --value-bytes. */
    Run drain(String scenario, int rows, long seed, dev.outbox.Header header, int extraValueBytes,
              Consumer<Dispatcher> instrument) throws InterruptedException {
        return drain(scenario, rows, seed, header, extraValueBytes, instrument, DispatcherConfig.Harvest.CURSOR);
    }

    private Run drain(String scenario, int rows, long seed, dev.outbox.Header header,
                      Consumer<Dispatcher> instrument, DispatcherConfig.Harvest harvest) throws InterruptedException {
        return drain(scenario, rows, seed, header, 0, instrument, harvest);
    }

    private Run drain(String scenario, int rows, long seed, dev.outbox.Header header, int extraValueBytes,
                      Consumer<Dispatcher> instrument, DispatcherConfig.Harvest harvest) throws InterruptedException {
        String topic = env.newTopic("drain");
        double fill = backlog.fill(topic, rows, seed, header, extraValueBytes);
        return deliver(scenario, rows, fill, env.store(), harvest, instrument, backlog::count, true, false);
    }

    /**
     * The cursor drain of a table of --shards shards ({@code drain-shards}: one Dispatcher leads every shard, no leader
     * transport; {@code drain-shards-2}: two Dispatchers in this JVM, the shards spread over them by Kafka's group
     * coordinator through a {@link KafkaShardedLeaderTransport} each, on a leader topic of their own). Timed from the
     * first send of either to the last acknowledgement, like {@link #drain}; each Dispatcher has its own producer.
     * With two, the Dispatchers start on the empty table and the backlog is filled (one {@code COPY}, visible at
     * once) only when each leads its share, so that the time is the drain's, not the group's first rebalance.
     */
    Run drainSharded(String scenario, int rows, long seed, int dispatchers) throws InterruptedException {
        int shards = options.shards;
        String topic = env.newTopic("drain");
        if (dispatchers == 1) {
            double fill = backlog.fillSharded(topic, rows, seed, shards);
            return deliver(scenario, rows, fill, env.database().shardedStore(shards), shardHarvest(),
                    d -> { }, backlog::count, true, false);
        }
        DispatcherConfig config = env.dispatcherConfig();
        java.util.concurrent.atomic.AtomicLong acks = new java.util.concurrent.atomic.AtomicLong();
        CountDownLatch all = new CountDownLatch(1);
        TimingBroker.AckListener counted = (record, nanos) -> {
            if (acks.incrementAndGet() == rows) {
                all.countDown();
            }
        };
        String leaderTopic = "bench-shard-leaders-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        List<TimingBroker> brokers = new ArrayList<>();
        List<TimingStore> stores = new ArrayList<>();
        List<Dispatcher> running = new ArrayList<>();
        CpuMeter cpu;
        boolean done;
        double fill;
        env.database().resetSharded(shards);
        try {
            for (int i = 0; i < dispatchers; i++) {
                KafkaMessageBroker kafka = env.newBroker("bench-drain-" + i);
                TimingBroker broker = new TimingBroker(kafka, 0, counted);
                TimingStore store = new TimingStore(env.database().shardedStore(shards), true);
                KafkaShardedLeaderTransport leaders = KafkaShardedLeaderTransport.builder()
                        .bootstrapServers(env.kafka().bootstrapServers())
                        .topic(leaderTopic)
                        .shards(shards)
                        .dispatcherConfig(config)
                        .deliveryTimeoutOf(kafka)
                        .build();
                Dispatcher d = Dispatcher.builder(store, broker).config(config.toBuilder().harvest(shardHarvest())
                                .build()).leaderTransport(leaders)
                        .name("bench-drain-" + i).build();
                brokers.add(broker);
                stores.add(store);
                running.add(d);
            }
            running.forEach(Dispatcher::start);
            long spread = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!evenlyLed(running, shards)) {
                if (System.nanoTime() - spread > 0) {
                    throw new IllegalStateException("the " + dispatchers + " Dispatchers did not share the " + shards
                            + " shards within 60 s");
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            fill = backlog.fillAfterReset(topic, rows, seed, null, 0);
            cpu = new CpuMeter(ServerCpu.of(env.database())); // the CPU of the drain, not of the fill
            done = all.await(options.timeout.toNanos(), TimeUnit.NANOSECONDS);
        } finally {
            running.forEach(Dispatcher::close);
        }
        long first = brokers.stream().mapToLong(TimingBroker::firstSendNanos).filter(t -> t != 0).min()
                .orElse(System.nanoTime());
        long end = done ? brokers.stream().mapToLong(TimingBroker::lastAckNanos).max().orElseThrow()
                : System.nanoTime();
        double seconds = (end - first) / 1e9;
        String cpuUsed = cpu.describe(acks.get());
        StringBuilder split = new StringBuilder();
        for (int i = 0; i < dispatchers; i++) {
            split.append(i == 0 ? "acknowledged by each Dispatcher: " : ", ").append(brokers.get(i).acks());
        }
        String breakdown = split + "; " + stores.get(0).summary(seconds) + "; " + cpuUsed;
        return new Run(scenario, Math.min(rows, acks.get()), seconds, backlog.count(), fill, breakdown);
    }

    /**
     * The harvest of the sharded drains: CURSOR, or MARK with {@code -Dbench.shardHarvest=MARK} (an A/B knob: a
     * shard's cursor re-reads the other shards' ids as gaps, the mark harvest has none).
     */
    private static DispatcherConfig.Harvest shardHarvest() {
        return DispatcherConfig.Harvest.valueOf(System.getProperty("bench.shardHarvest", "CURSOR"));
    }

    /** Whether every shard is led, and every Dispatcher leads at least one. */
    private static boolean evenlyLed(List<Dispatcher> dispatchers, int shards) {
        int led = 0;
        for (Dispatcher d : dispatchers) {
            long mine = d.shardHealth().stream()
                    .filter(h -> h.status() == dev.outbox.DispatcherHealth.Status.LEADER).count();
            if (mine == 0) {
                return false;
            }
            led += (int) mine;
        }
        return led == shards;
    }

    /**
     * The Dispatcher over the WAL harvest ({@link BenchDatabase#walStore()}) delivers {@code rows} messages that
     * were emitted into the WAL after its slot was created; timed from its first send to its last
     * acknowledgement, like {@link #drain}. Left: the messages the slot still holds after the Dispatcher closed
     * ({@link #walLeft()}).
     */
    Run drainWal(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain-wal");
        double fill = backlog.fillWal(topic, rows, seed);
        return deliver("drain-wal", rows, fill, env.database().walStore(), DispatcherConfig.Harvest.CURSOR,
                d -> { }, this::walLeft, true, false);
    }

    /** The Dispatcher harvests the backlog just filled from {@code raw} into Kafka; see {@link #drain}. */
    private Run deliver(String scenario, int rows, double fill, Store raw, DispatcherConfig.Harvest harvest,
                        Consumer<Dispatcher> instrument, LongSupplier left, boolean fencing, boolean skipPurge)
            throws InterruptedException {
        TimingBroker broker = new TimingBroker(env.newBroker("bench-drain"), rows, null);
        TimingStore store = new TimingStore(raw, fencing, skipPurge);
        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .config(env.dispatcherConfig().toBuilder().harvest(harvest).build())
                .name("bench-drain")
                .build();
        instrument.accept(dispatcher);
        Map<String, Long> counters = env.database().counters();
        CpuMeter cpu = new CpuMeter(ServerCpu.of(env.database()));
        dispatcher.start();
        boolean done;
        try {
            done = broker.awaitAcks(options.timeout);
        } finally {
            dispatcher.close();
        }
        long end = done ? broker.lastAckNanos() : System.nanoTime();
        double seconds = (end - broker.firstSendNanos()) / 1e9;
        String cpuUsed = cpu.describe(broker.acks());
        StringBuilder waits = new StringBuilder();
        env.database().counters().forEach((k, v) -> {
            Long before = counters.get(k);
            if (before != null) {
                waits.append(waits.length() == 0 ? "; server counters: " : ", ").append(k).append(' ')
                        .append(v - before);
            }
        });
        String breakdown = store.summary(seconds) + Report.fmt("; send calls %.0f %% of the time",
                100 * broker.sendNanos() / 1e9 / seconds)
                + "; " + cpuUsed + waits;
        return new Run(scenario, Math.min(rows, broker.acks()), seconds, left.getAsLong(), fill, breakdown);
    }

    /**
     * The messages the WAL harvest's slot holds after its confirmed position, counted by the server
     * ({@code pg_logical_slot_peek_binary_changes}, the stream closed first): what a new leader would deliver again.
     */
    long walLeft() {
        PostgresStore wal = (PostgresStore) env.database().walStore();
        wal.harvestStopped();
        // The stream is closed, but its WAL sender may not have let go of the slot yet: a peek would fail.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '"
                + wal.slot() + "' AND active") > 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("slot " + wal.slot() + " still active 30 s after the stream closed");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        return BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('"
                + wal.slot() + "', NULL, NULL, 'proto_version', '1', 'publication_names', '" + BenchEnvironment.TABLE
                + "_publication', 'messages', 'true') WHERE get_byte(data, 0) = 77"); // 'M': a logical message
    }

    /**
     * The ceiling of the WAL harvest: the WAL store's own {@code read} (its replication stream, decoded) and
     * {@code purge} (which confirms the slot as far as everything before is finished) take {@code rows} messages
     * emitted into the WAL with no broker, pipelined like {@link #cursorCeiling}. Timed from the first read (which
     * opens the stream) to the last purge.
     */
    Run walCeiling(int rows, long seed) throws InterruptedException {
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
        String breakdown = store.summary(seconds) + (firstMessage.get() == 0 ? ""
                : Report.fmt("; first message read %.0f ms after the first read began",
                (firstMessage.get() - started) / 1e6));
        return new Run("wal-ceiling", purged.get(), seconds, walLeft(), fill, breakdown);
    }

    /**
     * The ceiling of the cursor harvest: the store's own {@code read} above a cursor kept in memory (no recheck
     * ranges: a quiet backlog has no gaps) and its batched {@code purge} drain the backlog with no broker, pipelined
     * as the Dispatcher does it (reading on one thread, purging on another, at most {@code maxInFlightRecords} rows
     * read and not yet purged, each read as large as the room allows).
     */
    Run cursorCeiling(int rows, long seed) throws InterruptedException {
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
        return new Run("cursor", purged.get(), seconds, backlog.count(), fill, store.summary(seconds) + "; "
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

    Run databaseCeiling(int rows, long seed) throws InterruptedException {
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
        return new Run("database", purged.get(), seconds, backlog.count(), fill, store.summary(seconds));
    }

    /**
     * Kafka alone: a bare {@link KafkaProducer} with the Dispatcher's producer properties sends {@code rows}
     * records of the same shape (keys out of --keys, values of --value-bytes) as fast as it accepts them, with at
     * most 5 x --max-in-flight records unacknowledged (unbounded, the producer buffers ~200,000 records, and on a
     * starved machine requests time out and idempotent retries fail with out-of-order sequence numbers); timed
     * from the first send to the last acknowledgement.
     */
    Run brokerCeiling(int rows, long seed) throws InterruptedException {
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
        return new Run("broker", acked.get() - failed.get(), (lastAck.get() - started) / 1e9, -1, 0,
                (failed.get() == 0 ? "" : failed.get() + " sends failed; ") + cpuUsed);
    }

    /**
     * The reference implementation's pattern, one row at a time: mark one row, send it and wait for the
     * acknowledgement, delete it; each a statement and a commit of its own. The producer lingers 0 ms (the
     * benchmark's producer waits linger.ms for a batch that never comes when sends are synchronous). Stops
     * after --naive-seconds even if rows are left: its rate is what matters.
     */
    Run naive(int rows, long seed) throws Exception {
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
        return new Run("naive", moved, seconds, backlog.count(), fill, breakdown);
    }

    /** Leaves time between runs so that the database's background writers settle a little. */
    static void settle() {
        BenchEnvironment.pause(Duration.ofSeconds(1));
    }
}
