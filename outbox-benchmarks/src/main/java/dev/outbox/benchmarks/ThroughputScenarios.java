package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.PayloadSerializer;
import dev.outbox.spi.Store;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.handlers.MessageHandler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The drains of a pre-filled backlog by the Dispatcher: cursor, mark, WAL, sharded, transactional, unfenced, without
 * purge, and into in-process handlers. The references they are judged against are {@link CeilingScenarios}. Not
 * thread-safe: one scenario at a time.
 */
final class ThroughputScenarios {
    /** The throughput scenarios, in the order they run and are reported. */
    static final List<String> NAMES = List.of("drain", "drain-txn", "drain-eos", "drain-unfenced", "drain-mark", "drain-nopurge", "drain-wal",
            "drain-handlers", "drain-rabbitmq", "drain-latest-only",
            "drain-shards", "drain-shards-2", "database", "cursor", "wal-ceiling", "broker", "broker-rabbitmq", "naive");

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

    /**
     * The same drain publishing exactly once ({@code KafkaMessageBroker.Builder#exactlyOnce}: a progress record in
     * each transaction), labelled {@code drain-eos}: next to {@code drain-txn} it gives the cost of exactly-once.
     */
    Run drainExactlyOnce(int rows, long seed) throws InterruptedException {
        env.transactionalBrokers("bench-eos", true);
        try {
            return drain("drain-eos", rows, seed, null, d -> { });
        } finally {
            env.transactionalBrokers(null);
        }
    }

    /**
     * The cursor drain of a backlog written for {@code topic} into {@code target} instead of the benchmark's Kafka,
     * labelled {@code scenario} (the RabbitMQ line: {@link RabbitMqScenarios}).
     */
    Run drainInto(String scenario, int rows, long seed, String topic, MessageBroker target)
            throws InterruptedException {
        double fill = backlog.fill(topic, rows, seed);
        return deliver(scenario, rows, fill, env.store(), DispatcherConfig.Harvest.CURSOR, d -> { }, backlog::count,
                true, false, target);
    }

    /**
     * The same drain with every message latest only ({@code drain-latest-only}: the header
     * {@value dev.outbox.OutboxMessage#LATEST_ONLY_HEADER} on each row): a record whose key has a newer one queued
     * behind it is purged without a send. Timed to the last record settled, sent or superseded (the Dispatcher's
     * observer tells the broker wrapper of each superseded one); next to {@code drain} it gives the option's cost.
     */
    Run drainLatestOnly(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain");
        double fill = backlog.fill(topic, rows, seed,
                dev.outbox.Header.of(dev.outbox.OutboxMessage.LATEST_ONLY_HEADER, "1"), 0);
        return deliver("drain-latest-only", rows, fill, env.store(), DispatcherConfig.Harvest.CURSOR, d -> { },
                backlog::count, true, false, env.newBroker("bench-drain"), true);
    }

    /**
     * The same drain into in-process handlers ({@code drain-handlers}): a {@link HandlerMessageBroker} whose one
     * handler, for the drain's topic, takes the decoded payload and does nothing with it; next to {@code drain} it
     * gives the handlers' path against Kafka's.
     */
    Run drainHandlers(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain");
        double fill = backlog.fill(topic, rows, seed);
        return deliver("drain-handlers", rows, fill, env.store(), DispatcherConfig.Harvest.CURSOR, d -> { },
                backlog::count, true, false, noOpHandlers(topic, (value, record) -> { }));
    }

    /** In-process handlers with one handler, for {@code topic}, of the raw value (decoded as the bytes it is). */
    static HandlerMessageBroker noOpHandlers(String topic, MessageHandler<byte[]> handler) {
        return HandlerMessageBroker.builder(RAW).handler(topic, byte[].class, handler).name("bench-handlers")
                .build();
    }

    /** The benchmark's values as they are: what a handler of {@code byte[]} receives. */
    private static final PayloadSerializer RAW = new PayloadSerializer() {
        @Override
        public String contentType() {
            return "application/octet-stream";
        }

        @Override
        public byte[] serialize(Object payload) {
            return (byte[]) payload;
        }

        @Override
        public <T> T deserialize(byte[] value, Class<T> type) {
            return type.cast(value);
        }
    };

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
     * ({@link #walLeft(BenchEnvironment)}).
     */
    Run drainWal(int rows, long seed) throws InterruptedException {
        String topic = env.newTopic("drain-wal");
        double fill = backlog.fillWal(topic, rows, seed);
        return deliver("drain-wal", rows, fill, env.database().walStore(), DispatcherConfig.Harvest.CURSOR,
                d -> { }, () -> walLeft(env), true, false);
    }

    /** The Dispatcher harvests the backlog just filled from {@code raw} into Kafka; see {@link #drain}. */
    private Run deliver(String scenario, int rows, double fill, Store raw, DispatcherConfig.Harvest harvest,
                        Consumer<Dispatcher> instrument, LongSupplier left, boolean fencing, boolean skipPurge)
            throws InterruptedException {
        return deliver(scenario, rows, fill, raw, harvest, instrument, left, fencing, skipPurge,
                env.newBroker("bench-drain"));
    }

    private Run deliver(String scenario, int rows, double fill, Store raw, DispatcherConfig.Harvest harvest,
                        Consumer<Dispatcher> instrument, LongSupplier left, boolean fencing, boolean skipPurge,
                        MessageBroker target) throws InterruptedException {
        return deliver(scenario, rows, fill, raw, harvest, instrument, left, fencing, skipPurge, target, false);
    }

    /** @param countSuperseded whether superseded records count as settled (an observer; none otherwise) */
    private Run deliver(String scenario, int rows, double fill, Store raw, DispatcherConfig.Harvest harvest,
                        Consumer<Dispatcher> instrument, LongSupplier left, boolean fencing, boolean skipPurge,
                        MessageBroker target, boolean countSuperseded) throws InterruptedException {
        TimingBroker broker = new TimingBroker(target, rows, null);
        TimingStore store = new TimingStore(raw, fencing, skipPurge);
        Dispatcher.Builder builder = Dispatcher.builder(store, broker)
                .config(env.dispatcherConfig().toBuilder().harvest(harvest).build())
                .name("bench-drain");
        if (countSuperseded) {
            builder.observer(new dev.outbox.DispatcherObserver() {
                @Override
                public void superseded(dev.outbox.OutboxRecord record, long newerId) {
                    broker.settledWithoutSend();
                }
            });
        }
        Dispatcher dispatcher = builder.build();
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
        String breakdown = (countSuperseded ? Report.fmt("%,d sent, %,d superseded; ",
                broker.acks() - broker.settledUnsent(), broker.settledUnsent()) : "")
                + store.summary(seconds) + Report.fmt("; send calls %.0f %% of the time",
                100 * broker.sendNanos() / 1e9 / seconds)
                + "; " + cpuUsed + waits;
        return new Run(scenario, Math.min(rows, broker.acks()), seconds, left.getAsLong(), fill, breakdown);
    }

    /**
     * The messages the WAL harvest's slot holds after its confirmed position, counted by the server
     * ({@code pg_logical_slot_peek_binary_changes}, the stream closed first): what a new leader would deliver again.
     */
    static long walLeft(BenchEnvironment env) {
        PostgresStore wal = (PostgresStore) env.database().walStore();
        // The harvest that streamed (the dispatcher's, the ceiling's) has closed its stream, but its WAL sender may not have let go of the slot yet: a peek would fail.
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

    /** Leaves time between runs so that the database's background writers settle a little. */
    static void settle() {
        BenchEnvironment.pause(Duration.ofSeconds(1));
    }
}
