package dev.outbox.benchmarks;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spi.Store;
import org.HdrHistogram.Histogram;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Latency under load: writer threads commit outbox rows at a fixed offered rate (open loop: each transaction
 * has its scheduled time, and a writer that falls behind commits at once rather than skipping), while the
 * Dispatcher harvests them and a consumer reads them back. Each record carries a sequence number in its first
 * eight value bytes; its scheduled, commit, acknowledgement and consumption times are noted per sequence
 * number, and the latencies go into HdrHistograms (fixed memory, three significant digits). Commit-to-ack is the
 * outbox's own latency; scheduled-to-ack is the same corrected for coordinated omission: measured from when the
 * open-loop schedule wanted the transaction to start, so a writer that fell behind (a slow commit, a stalled
 * pool) does not hide the time its late records waited. Records scheduled during the warm-up are left out of the
 * statistics. Not thread-safe: one run at a time.
 */
final class LatencyScenario {
    /** The outcome of one offered rate. */
    record Result(int offeredRate, int recordsPerTx, int writers, double achievedRate, boolean writersKeptUp,
                  double ackRate,
                  long measured, long unacknowledged, Stats commitToAck, Stats commitToSend, Stats sendToAck,
                  Stats scheduledToAck,
                  Stats commitToConsume,
                  long backlogMax, long backlogEnd, double backlogSlope, boolean sustainable, double drainAfterSeconds,
                  String variant, long poisonFailures) {
        /** Whether this run had the poison key ({@link LatencyScenario#POISON_KEY}). */
        boolean poisoned() {
            return variant.startsWith("poison");
        }
    }

    /**
     * The key whose every send fails (retriably) in the poison variant; its records are not measured. It gets a
     * healthy key's share of the records, so at 5,000 records/s over 1,000 keys about 5 records/s.
     */
    static final String POISON_KEY = "bench-poison";

    /** Latencies up to an hour, in nanoseconds, to three significant digits; longer ones count as an hour. */
    static Histogram histogram() {
        return new Histogram(TimeUnit.HOURS.toNanos(1), 3);
    }

    static void record(Histogram histogram, long nanos) {
        histogram.recordValue(Math.min(histogram.getHighestTrackableValue(), Math.max(0, nanos)));
    }

    /** Percentiles of a histogram of latencies, in milliseconds. */
    record Stats(long count, double p50, double p99, double p999, double max) {
        static Stats of(Histogram nanos) {
            if (nanos.getTotalCount() == 0) {
                return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
            }
            return new Stats(nanos.getTotalCount(), nanos.getValueAtPercentile(50) / 1e6,
                    nanos.getValueAtPercentile(99) / 1e6, nanos.getValueAtPercentile(99.9) / 1e6,
                    nanos.getMaxValue() / 1e6);
        }
    }

    private final BenchEnvironment env;
    private final BenchmarkOptions options;

    /** The prefix of a mark-harvest run's variant. */
    static final String MARK_VARIANT = "mark harvest, ";
    /** The prefix of a WAL-harvest run's variant. */
    static final String WAL_VARIANT = "WAL harvest, ";
    /**
     * Whether the writers tell their publisher after each commit ({@link Publisher#committed()}), as the Spring Boot
     * starter does and as a writer in the leader's process can: true unless {@code -Dbench.committed=false}, which
     * measures writers in other processes (woken by the database's notification alone). Never in a polling run.
     */
    private static final boolean NUDGE = Boolean.parseBoolean(System.getProperty("bench.committed", "true"));

    /** The prefix of a polling run's variant (no commit wake-ups, the producer lingers). */
    static final String POLL_VARIANT = "polling, ";
    /** The prefix of a run's variant whose broker publishes in Kafka transactions. */
    static final String TXN_VARIANT = "transactional producer, ";
    /** Set around {@link #runTransactional}: the variant says so. */
    private boolean transactional;
    /** The prefix of a run's variant whose transactional broker also publishes exactly once ({@code exactlyOnce}). */
    static final String EOS_VARIANT = "exactly once, ";
    /** Set around {@link #runExactlyOnce}: the variant says so. */
    private boolean exactlyOnce;
    /** The prefix of a run's variant whose records go to in-process handlers instead of Kafka. */
    static final String HANDLERS_VARIANT = "in-process handlers, ";
    /** Set around {@link #runHandlers}: the variant says so. */
    private boolean handlers;
    /** The prefix of a run's variant whose records go to RabbitMQ instead of Kafka. */
    static final String RABBITMQ_VARIANT = "RabbitMQ, ";
    /** Set around {@link #runRabbitMq}: the variant says so. */
    private boolean rabbitMq;

    /** {@link #run(int)} with the environment's brokers transactional (the caller sets them so); the variant says so. */
    Result runTransactional(int rate) throws Exception {
        transactional = true;
        try {
            return run(rate);
        } finally {
            transactional = false;
        }
    }

    /**
     * {@link #run(int)} with the environment's brokers transactional and publishing exactly once (the caller sets them
     * so); the variant says so.
     */
    Result runExactlyOnce(int rate) throws Exception {
        transactional = true;
        exactlyOnce = true;
        try {
            return run(rate);
        } finally {
            transactional = false;
            exactlyOnce = false;
        }
    }

    /**
     * {@link #run(int)} into in-process handlers (a {@code HandlerMessageBroker} whose one handler notes the record's
     * arrival): acknowledgement is the handler's return, consumption its call.
     */
    Result runHandlers(int rate) throws Exception {
        handlers = true;
        try {
            return run(rate);
        } finally {
            handlers = false;
        }
    }

    /**
     * {@link #run(int)} into RabbitMQ ({@link RabbitMqScenarios#latencyPath}: {@code RabbitMqMessageBroker} with
     * publisher confirms to a per-key topology): acknowledgement is the node's confirm, consumption a consumer's
     * delivery from the key's queue.
     */
    Result runRabbitMq(int rate) throws Exception {
        rabbitMq = true;
        try {
            return run(rate);
        } finally {
            rabbitMq = false;
        }
    }

    LatencyScenario(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
    }

    Result run(int rate) throws Exception {
        return run(rate, options.keys, false);
    }

    /**
     * Runs the table harvest at 5,000 and then at 100 records/s for {@code --latency-jit-warmup} each and throws the
     * results away: the throughput warm-up compiles the drain's code, not what a low rate runs (a single record's
     * read, send, flush and purge, in the engine, the drivers and Kafka), and a cold JVM's first 10 records/s run
     * measured its interpreter (p50 5 ms against 1.3 ms once warm, 2026-11-24).
     */
    static void warmUp(BenchEnvironment env, BenchmarkOptions options) throws Exception {
        Duration duration = options.duration;
        Duration warmup = options.latencyWarmup;
        options.duration = options.latencyJitWarmup;
        options.latencyWarmup = Duration.ZERO;
        try {
            LatencyScenario latency = new LatencyScenario(env, options);
            latency.run(5_000);
            ThroughputScenarios.settle();
            latency.run(100);
        } finally {
            options.duration = duration;
            options.latencyWarmup = warmup;
        }
    }

    /**
     * One run at {@code rate} over {@code keyCount} keys; with {@code poison}, one more key whose every send fails
     * (a retriable failure, so each of its records is retried with backoff until {@code maxAttempts} parks it).
     * The healthy keys' latencies are what it measures.
     */
    Result run(int rate, int keyCount, boolean poison) throws Exception {
        return run(rate, keyCount, poison, DispatcherConfig.Harvest.CURSOR);
    }

    /** {@link #run(int, int, boolean)} with the given harvest; the mark harvest's variant says so. */
    Result run(int rate, int keyCount, boolean poison, DispatcherConfig.Harvest harvest) throws Exception {
        return run(rate, keyCount, poison, harvest, false, false);
    }

    /**
     * {@link #run(int)} as the harvest ran before commit wake-ups: the store's {@link BenchDatabase#pollingStore()}
     * (the leader backs off up to {@code pollInterval} while idle), and the producer lingers ({@code linger.ms})
     * whatever the dispatcher asks.
     */
    Result runPolling(int rate) throws Exception {
        return run(rate, options.keys, false, DispatcherConfig.Harvest.CURSOR, false, true);
    }

    /**
     * {@link #run(int)} with the WAL harvest ({@link BenchDatabase#walStore()}, Postgres): the writers emit logical
     * messages and the Dispatcher streams them from the slot; the backlog sampled is what the leader received and
     * has not finished.
     */
    Result runWal(int rate) throws Exception {
        return run(rate, options.keys, false, DispatcherConfig.Harvest.CURSOR, true, false);
    }

    /**
     * {@link #run(int)} on the same table split into {@code --shards} shards ({@link BenchDatabase#shardedStore}), all
     * led by the one Dispatcher: what sharding costs an outbox's latency when nothing else changes.
     */
    Result runSharded(int rate) throws Exception {
        return run(rate, options.keys, false, DispatcherConfig.Harvest.CURSOR, false, false, options.shards);
    }

    private Result run(int rate, int keyCount, boolean poison, DispatcherConfig.Harvest harvest, boolean wal,
                       boolean polling) throws Exception {
        return run(rate, keyCount, poison, harvest, wal, polling, 1);
    }

    private Result run(int rate, int keyCount, boolean poison, DispatcherConfig.Harvest harvest, boolean wal,
                       boolean polling, int shards) throws Exception {
        Store store;
        if (shards > 1) {
            env.database().resetSharded(shards);
            store = env.database().shardedStore(shards);
        } else if (wal) {
            new Backlog(env, options).resetWal();
            store = env.database().walStore();
        } else {
            new Backlog(env, options).reset();
            store = polling || !Boolean.parseBoolean(System.getProperty("bench.notify", "true"))
                    ? env.database().pollingStore() : env.store();
        }
        RabbitMqScenarios.LatencyPath rabbit = rabbitMq
                ? new RabbitMqScenarios(env, options, null).latencyPath("latency-" + rate) : null;
        String topic = rabbit != null ? rabbit.exchange() : env.newTopic("latency-" + rate);
        int perTx = options.recordsPerTx(rate);
        int writers = options.writers;
        long warmNanos = options.latencyWarmup.toNanos();
        long runNanos = warmNanos + options.duration.toNanos();
        int capacity = (int) Math.min(Integer.MAX_VALUE - 8,
                (long) Math.ceil(rate * (runNanos / 1e9) * 1.2) + 10L * perTx * writers + 10_000);
        long base = System.nanoTime();
        // Times are stored as (nanoTime - base + 1), so that 0 means "not yet".
        AtomicLongArray scheduled = new AtomicLongArray(capacity);
        AtomicLongArray committed = new AtomicLongArray(capacity);
        AtomicLongArray acked = new AtomicLongArray(capacity);
        AtomicLongArray sent = new AtomicLongArray(capacity);
        AtomicLongArray consumed = new AtomicLongArray(capacity);
        AtomicLong ackCount = new AtomicLong();

        ConsumerLoop consumer = new ConsumerLoop(handlers || rabbit != null ? null : env.kafka().bootstrapServers(),
                topic, base, consumed, capacity);
        MessageBroker real = handlers
                ? ThroughputScenarios.noOpHandlers(topic, (value, record) -> consumer.arrived(value))
                : rabbit != null ? rabbit.broker() : env.newBroker("bench-latency");
        AtomicLong poisonFailures = new AtomicLong();
        MessageBroker sending = !poison ? real : new PoisonBroker(real, poisonFailures);
        TimingBroker.AckListener timing = new TimingBroker.AckListener() {
            @Override
            public void acknowledged(OutboxRecord record, long nanos) {
                long seq = sequence(record.message().value());
                if (seq >= 0 && seq < capacity && acked.compareAndSet((int) seq, 0, nanos - base + 1)) {
                    ackCount.incrementAndGet();
                }
            }

            @Override
            public void sent(OutboxRecord record, long nanos) {
                long seq = sequence(record.message().value());
                if (seq >= 0 && seq < capacity) {
                    sent.compareAndSet((int) seq, 0, nanos - base + 1); // the first send: a retry is not the path
                }
            }
        };
        TimingBroker broker = new TimingBroker(sending, 0, timing,
                !polling && Boolean.parseBoolean(System.getProperty("bench.sendPending", "true")));
        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .config(env.dispatcherConfig().toBuilder().harvest(harvest).build())
                .name("bench-latency")
                .build();
        consumer.start();
        if (rabbit != null) {
            rabbit.consume(consumer::arrived);
        }
        dispatcher.start();

        AtomicLong sequences = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long start = System.nanoTime() + 200_000_000L; // let every writer get its connection first
        long end = start + runNanos;
        long interval = (long) (1e9 * perTx * writers / rate);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            long offset = interval * w / writers;
            long writerSeed = options.seed + w;
            Thread t = new Thread(() -> write(store, start + offset, end, interval, perTx, topic, writerSeed,
                    sequences, scheduled, committed, base, capacity, failure, keyCount, poison, !polling && NUDGE),
                    "bench-writer-" + w);
            t.setDaemon(true);
            threads.add(t);
        }
        BacklogSampler sampler = new BacklogSampler(store, start, warmNanos);
        threads.forEach(Thread::start);
        sampler.start();
        for (Thread t : threads) {
            t.join();
        }
        long writersDone = System.nanoTime();
        sampler.stop();
        if (failure.get() != null) {
            dispatcher.close();
            consumer.stop();
            if (rabbit != null) {
                rabbit.close();
            }
            throw new IllegalStateException("writer failed: " + failure.get(), failure.get());
        }
        long total = Math.min(sequences.get(), capacity);
        // Wait for the tail: every committed record acknowledged and consumed (bounded).
        long waitEnd = System.nanoTime() + Math.max(Duration.ofSeconds(30).toNanos(), runNanos);
        while (System.nanoTime() - waitEnd < 0 && (ackCount.get() < total || consumer.count() < total)) {
            LockSupport.parkNanos(2_000_000);
        }
        double drainAfter = (System.nanoTime() - writersDone) / 1e9;
        dispatcher.close();
        consumer.stop();
        if (rabbit != null) {
            rabbit.close();
        }

        long measuredFrom = start - base + 1 + warmNanos;
        Histogram toAck = histogram();
        Histogram toSend = histogram();
        Histogram sendToAck = histogram();
        Histogram scheduledToAck = histogram();
        Histogram toConsume = histogram();
        long measured = 0;
        long missing = 0;
        long ackedInWindow = 0;
        long committedInWindow = 0;
        long windowEnd = end - base + 1;
        for (int i = 0; i < total; i++) {
            long c = committed.get(i);
            long due = scheduled.get(i);
            long a = acked.get(i);
            if (a >= measuredFrom && a <= windowEnd) {
                ackedInWindow++;
            }
            if (c == 0 || due < measuredFrom) {
                continue;
            }
            if (c <= windowEnd) {
                committedInWindow++;
            }
            measured++;
            if (a == 0) {
                missing++;
            } else {
                record(toAck, a - c);
                record(scheduledToAck, a - due);
                long sentAt = sent.get(i);
                if (sentAt != 0) {
                    record(toSend, Math.max(0, sentAt - c)); // a record can be read before its writer's clock read
                    record(sendToAck, a - sentAt);
                }
            }
            long r = consumed.get(i);
            if (r != 0) {
                record(toConsume, r - c);
            }
        }
        double windowSeconds = options.duration.toNanos() / 1e9;
        double achieved = committedInWindow / windowSeconds;
        boolean writersKeptUp = achieved >= 0.95 * rate;
        long backlogEnd = sampler.last();
        double slope = sampler.slope();
        boolean sustainable = slope < 0.02 * rate && backlogEnd <= Math.max(1_000, rate)
                && missing == 0;
        return new Result(rate, perTx, writers, achieved, writersKeptUp, ackedInWindow / windowSeconds, measured,
                missing, Stats.of(toAck), Stats.of(toSend), Stats.of(sendToAck), Stats.of(scheduledToAck), Stats.of(toConsume), sampler.max(), backlogEnd, slope,
                sustainable, drainAfter, (poison ? "poison, " : "")
                + (harvest == DispatcherConfig.Harvest.MARK ? MARK_VARIANT : "") + (wal ? WAL_VARIANT : "")
                + (transactional ? TXN_VARIANT : "") + (exactlyOnce ? EOS_VARIANT : "") + (handlers ? HANDLERS_VARIANT : "")
                + (rabbitMq ? RABBITMQ_VARIANT : "")
                + (polling ? POLL_VARIANT : "") + (shards > 1 ? shards + " shards, " : "")
                + keyCount + " keys",
                poisonFailures.get());
    }

    private void write(Store store, long first, long end, long interval, int perTx, String topic, long seed,
                       AtomicLong sequences, AtomicLongArray scheduled, AtomicLongArray committed, long base,
                       int capacity, AtomicReference<Throwable> failure, int keyCount, boolean poison,
                       boolean nudge) {
        Publisher publisher = Boolean.getBoolean("bench.writersNotify") ? env.store().publisher() : store.publisher();
        String[] keys = Backlog.keys(keyCount);
        SplittableRandom random = new SplittableRandom(seed);
        try (Connection c = env.pool().getConnection()) {
            c.setAutoCommit(false);
            List<OutboxMessage> batch = new ArrayList<>(perTx);
            long[] seqs = new long[perTx];
            for (long due = first; due - end < 0 && failure.get() == null; due += interval) {
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                batch.clear();
                for (int i = 0; i < perTx; i++) {
                    // The poison key takes one key's share; its records carry no sequence number (-1).
                    boolean poisoned = poison && random.nextInt(keys.length + 1) == keys.length;
                    long seq = poisoned ? -1 : sequences.getAndIncrement();
                    seqs[i] = seq;
                    byte[] value = new byte[options.valueBytes];
                    random.nextBytes(value);
                    ByteBuffer.wrap(value).putLong(seq);
                    batch.add(OutboxMessage.of(topic, poisoned ? POISON_KEY : keys[random.nextInt(keys.length)],
                            value));
                }
                publisher.publish(c, batch);
                c.commit();
                if (nudge) {
                    publisher.committed(); // as the Spring Boot starter does after a commit
                }
                long now = System.nanoTime() - base + 1;
                for (long seq : seqs) {
                    if (seq >= 0 && seq < capacity) {
                        scheduled.set((int) seq, due - base + 1);
                        committed.set((int) seq, now);
                    }
                }
            }
        } catch (Throwable e) {
            failure.compareAndSet(null, e);
        }
    }

    /** Fails every send of {@link #POISON_KEY} retriably; passes everything else on. Thread-safe. */
    private static final class PoisonBroker implements MessageBroker {
        private final MessageBroker delegate;
        private final AtomicLong failures;

        PoisonBroker(MessageBroker delegate, AtomicLong failures) {
            this.delegate = delegate;
            this.failures = failures;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            if (record.key().equals(POISON_KEY)) {
                failures.incrementAndGet();
                return CompletableFuture.failedFuture(DeliveryException.retriable("poison key: every send fails",
                        null));
            }
            return delegate.send(record);
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

    static long sequence(byte[] value) {
        return value == null || value.length < 8 ? -1 : ByteBuffer.wrap(value).getLong();
    }
}
