package dev.outbox.benchmarks;


import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxShards;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.spi.Store;
import dev.outbox.store.sql.SqlShardedLeaderTransport;
import dev.outbox.store.sql.SqlStore;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Take-over of a sharded outbox: {@value #SHARDS} shards over {@value #DISPATCHERS} dispatchers, each in a child JVM
 * ({@link LeaderProcess} with {@code bench.shards}) whose shard leadership comes from a
 * {@link KafkaShardedLeaderTransport} or, with the {@code database} election, a {@link SqlShardedLeaderTransport}
 * (shard leases in the outbox's database: a killed dispatcher's shards are taken once their leases lapse), while a
 * writer in this JVM commits rows at {@code --takeover-rate}. After a
 * warm-up of {@code --takeover-warmup} (30 s: three JVMs compiling on two cores make a shorter quiet window a
 * measure of the JIT) and a quiet window of {@code --takeover-window} (15 s) with every dispatcher running, one of
 * them is killed with SIGKILL (no goodbye to the
 * group: its shards wait for its group session, {@link TakeoverScenario#SESSION_TIMEOUT_MS}, to expire before Kafka's
 * coordinator moves them). The records committed in the quiet window and in the window of the same length that
 * follows the kill are compared: the commit-to-acknowledgement latency of the shards the killed dispatcher did not
 * lead (which should not notice the take-over) against the quiet window's, and the stall of the killed
 * dispatcher's own shards.
 *
 * <p>Each record's value starts with its sequence number; this JVM notes its commit time and the children report
 * each acknowledgement's {@link System#nanoTime()} on standard output ({@code ACK seq:nanos ...}), which is
 * comparable across the JVMs of one machine (Linux: {@code CLOCK_MONOTONIC}). The children also report the shards
 * they lead ({@code LEADS 0,3}) whenever that changes. Not thread-safe: one run at a time.
 */
final class ShardedTakeoverScenario {
    static final int SHARDS = 6;
    static final int DISPATCHERS = 3;
    static final String ACK_LINE = "ACK ";
    static final String LEADS_LINE = "LEADS ";

    /**
     * One run. Latencies in milliseconds; {@code movedAfter} the seconds from the kill until every shard was led
     * again; {@code ownFirstAck} the seconds from the kill until the last of the killed dispatcher's shards had an
     * acknowledged record again; {@code unreported} the records the killed JVM had acknowledged and purged but not
     * yet reported (none is lost: a record unacknowledged otherwise fails the run); {@code moveOthers} the other
     * shards' records committed from {@value #MOVE_BEFORE_MS} ms before the killed dispatcher's shards were led
     * again to {@value #MOVE_AFTER_MS} ms after (their new leaders' catch-up on the backlog of the stall).
     */
    record Result(String election, int run, int killedShards, LatencyScenario.Stats quietOthers, LatencyScenario.Stats takeoverOthers,
                  LatencyScenario.Stats moveOthers, LatencyScenario.Stats quietOwn, LatencyScenario.Stats takeoverOwn,
                  double movedAfter, double ownFirstAck, long committed, long unreported, long duplicates) {
        /** The take-over window's p99 of the other shards over the quiet window's. */
        double p99Ratio() {
            return takeoverOthers.p99() / quietOthers.p99();
        }

        /** The p99 of the other shards around the move (the catch-up) over the quiet window's. */
        double moveP99Ratio() {
            return moveOthers.p99() / quietOthers.p99();
        }

        /** The worse of {@link #p99Ratio()} and {@link #moveP99Ratio()}: what the goal is judged on. */
        double worstRatio() {
            return Math.max(p99Ratio(), moveP99Ratio());
        }
    }

    /** The window around the move: from this many ms before the killed dispatcher's shards are led again ... */
    static final int MOVE_BEFORE_MS = 1_000;
    /** ... to this many ms after. */
    static final int MOVE_AFTER_MS = 3_000;

    private final BenchEnvironment env;
    private final BenchmarkOptions options;

    ShardedTakeoverScenario(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
    }

    Result run(String election, int index) throws Exception {
        env.database().resetSharded(SHARDS);
        if (election.equals(TakeoverScenario.DATABASE)) {
            TakeoverScenario.dropLeases(env);
        }
        String topic = env.newTopic("takeover-shards");
        String leaderTopic = "bench-shard-leaders-" + ProcessHandle.current().pid() + "-takeover-" + index + "-"
                + System.nanoTime();
        DispatcherConfig config = TakeoverScenario.config(env.dispatcherConfig());
        Map<String, Object> producer = TakeoverScenario.producer(env.producerProperties());
        String[] keys = Backlog.keys(options.keys);
        int[] shardOfKey = new int[keys.length];
        for (int k = 0; k < keys.length; k++) {
            shardOfKey[k] = OutboxShards.shardOf(keys[k], SHARDS);
        }
        int rate = options.takeoverRate;
        Duration window = options.takeoverWindow;
        int capacity = (int) (rate * (3 * window.toSeconds() + 120)) + 10_000;
        long base = System.nanoTime();
        Times times = new Times(capacity, base);
        List<Child> children = new ArrayList<>();
        Writer writer = null;
        try {
            for (int i = 0; i < DISPATCHERS; i++) {
                children.add(new Child("bench-shard-" + i, election, leaderTopic, producer, config, times));
            }
            awaitSpread(children, Duration.ofSeconds(90));
            writer = new Writer(topic, rate, keys, shardOfKey, times);
            writer.start();
            // the writer's start, and the JIT of the children: --takeover-warmup
            long quietStart = System.nanoTime() + Math.max(options.takeoverWarmup.toNanos(), 200_000_000L);
            pauseUntil(quietStart + window.toNanos());
            // A loaded machine may be moving shards at the end of the quiet window (a group's rebalance, a lease's
            // balancing): the victim is killed once every shard has one leader again and it leads its share.
            awaitSpread(children, Duration.ofSeconds(60));
            Child victim = children.get(0);
            int[] own = victim.led.get();
            long killed = System.nanoTime();
            victim.process.destroyForcibly();
            victim.process.waitFor(30, TimeUnit.SECONDS);
            long takeoverEnd = killed + window.toNanos();
            List<Child> survivors = children.subList(1, children.size());
            long moved = awaitAllLed(survivors, Duration.ofSeconds(60));
            pauseUntil(takeoverEnd);
            writer.stop();
            long committed = writer.count();
            boolean[] isOwn = new boolean[SHARDS];
            for (int s : own) {
                isOwn[s] = true;
            }
            // Every record acknowledged, except those the killed JVM had acknowledged and purged but not yet reported
            // (it reports every 20 ms): records of its shards committed before the kill, gone from the table.
            Store sharded = env.database().shardedStore(SHARDS);
            long killedAt = killed;
            try {
                TakeoverScenario.await("every committed record to be acknowledged", () -> {
                    if (times.ackedCount.get() >= committed) {
                        return true;
                    }
                    return dev.outbox.spi.Store.require(sharded, dev.outbox.spi.Gauges.class, "the benchmark").backlog() == 0 && dev.outbox.spi.Store.require(sharded, dev.outbox.spi.Gauges.class, "the benchmark").parkedCount() == 0
                            && unreported(times, committed, isOwn, killedAt) >= 0;
                }, Duration.ofSeconds(60));
            } catch (IllegalStateException e) {
                int[] unacked = new int[SHARDS];
                for (int seq = 0; seq < committed; seq++) {
                    if (times.acked.get(seq) == 0) {
                        unacked[times.shard.get(seq)]++;
                    }
                }
                StringJoiner led = new StringJoiner("; ");
                for (Child c : survivors) {
                    led.add(c.name + " leads " + Arrays.toString(c.led.get()));
                }
                throw new IllegalStateException(e.getMessage() + ": unacknowledged per shard "
                        + Arrays.toString(unacked) + "; " + led + "; rows left " + dev.outbox.spi.Store.require(sharded, dev.outbox.spi.Gauges.class, "the benchmark").backlog(), e);
            }
            long lostReports = Math.max(0, unreported(times, committed, isOwn, killed));
            Histogram quietOthers = LatencyScenario.histogram();
            Histogram takeoverOthers = LatencyScenario.histogram();
            Histogram moveOthers = LatencyScenario.histogram();
            long moveFrom = moved - TimeUnit.MILLISECONDS.toNanos(MOVE_BEFORE_MS);
            long moveTo = moved + TimeUnit.MILLISECONDS.toNanos(MOVE_AFTER_MS);
            Histogram quietOwn = LatencyScenario.histogram();
            Histogram takeoverOwn = LatencyScenario.histogram();
            long ownFirstAck = 0;
            long[] firstAckAfterKill = new long[SHARDS];
            for (int seq = 0; seq < committed; seq++) {
                long c = times.committed.get(seq);
                long a = times.acked.get(seq);
                if (a == 0) {
                    continue; // its acknowledgement's report died with the killed JVM (counted below)
                }
                int shard = times.shard.get(seq);
                long commitAt = base + c - 1;
                long ackAt = base + a - 1;
                // committed after the kill: only a successor can have sent it
                if (commitAt - killed > 0
                        && (firstAckAfterKill[shard] == 0 || ackAt - firstAckAfterKill[shard] < 0)) {
                    firstAckAfterKill[shard] = ackAt;
                }
                boolean quiet = commitAt - quietStart >= 0 && commitAt - (quietStart + window.toNanos()) < 0;
                boolean takeover = commitAt - killed >= 0 && commitAt - takeoverEnd < 0;
                Histogram h = quiet ? (isOwn[shard] ? quietOwn : quietOthers)
                        : takeover ? (isOwn[shard] ? takeoverOwn : takeoverOthers) : null;
                if (h != null) {
                    LatencyScenario.record(h, a - c);
                }
                if (!isOwn[shard] && commitAt - moveFrom >= 0 && commitAt - moveTo < 0) {
                    LatencyScenario.record(moveOthers, a - c);
                }
            }
            for (int s : own) {
                ownFirstAck = Math.max(ownFirstAck, firstAckAfterKill[s] - killed);
            }
            return new Result(election, index, own.length, LatencyScenario.Stats.of(quietOthers),
                    LatencyScenario.Stats.of(takeoverOthers), LatencyScenario.Stats.of(moveOthers),
                    LatencyScenario.Stats.of(quietOwn),
                    LatencyScenario.Stats.of(takeoverOwn), (moved - killed) / 1e9, ownFirstAck / 1e9, committed,
                    lostReports, times.duplicates.get());
        } finally {
            if (writer != null) {
                writer.stop();
            }
            for (Child c : children) {
                c.process.destroyForcibly();
            }
            for (Child c : children) {
                c.process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * The records never reported acknowledged, if every one of them is of the killed JVM's shards and was committed
     * before the kill (acknowledged and purged by it, its report lost with it: the table holds none of them); -1 if
     * any other record is unacknowledged.
     */
    private static long unreported(Times times, long committed, boolean[] killedShards, long killed) {
        long n = 0;
        for (int seq = 0; seq < committed; seq++) {
            if (times.acked.get(seq) != 0) {
                continue;
            }
            long commitAt = times.base + times.committed.get(seq) - 1;
            if (!killedShards[times.shard.get(seq)] || commitAt - killed >= 0) {
                return -1;
            }
            n++;
        }
        return n;
    }

    private static void pauseUntil(long nanoTime) {
        for (long left = nanoTime - System.nanoTime(); left > 0; left = nanoTime - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    /** Waits until every shard has exactly one leader among {@code children} and each child leads one. */
    private static void awaitSpread(List<Child> children, Duration timeout) throws Exception {
        TakeoverScenario.await("the " + SHARDS + " shards to be spread over the " + children.size()
                + " dispatchers", () -> {
                    int[] leaders = new int[SHARDS];
                    for (Child c : children) {
                        int[] led = c.led.get();
                        if (led.length == 0) {
                            return false;
                        }
                        for (int s : led) {
                            leaders[s]++;
                        }
                    }
                    return Arrays.stream(leaders).allMatch(n -> n == 1);
                }, timeout);
    }

    /** Waits until every shard has a leader among {@code children}; returns when that was first seen. */
    private static long awaitAllLed(List<Child> children, Duration timeout) throws Exception {
        TakeoverScenario.await("the killed dispatcher's shards to move", () -> {
            boolean[] led = new boolean[SHARDS];
            for (Child c : children) {
                for (int s : c.led.get()) {
                    led[s] = true;
                }
            }
            for (boolean l : led) {
                if (!l) {
                    return false;
                }
            }
            return true;
        }, timeout);
        return System.nanoTime();
    }

    /** Per sequence number: shard, commit and first acknowledgement, as {@code nanoTime - base + 1} (0: not yet). */
    private static final class Times {
        final AtomicIntegerArray shard;
        final AtomicLongArray committed;
        final AtomicLongArray acked;
        final AtomicLong ackedCount = new AtomicLong();
        final AtomicLong duplicates = new AtomicLong();
        final long base;

        Times(int capacity, long base) {
            this.shard = new AtomicIntegerArray(capacity);
            this.committed = new AtomicLongArray(capacity);
            this.acked = new AtomicLongArray(capacity);
            this.base = base;
        }

        void ack(long seq, long nanos) {
            if (seq < 0 || seq >= acked.length()) {
                return;
            }
            if (acked.compareAndSet((int) seq, 0, nanos - base + 1)) {
                ackedCount.incrementAndGet();
            } else {
                duplicates.incrementAndGet();
            }
        }
    }

    /** One dispatcher JVM; its output thread keeps {@link #led} and the acknowledgements. */
    private final class Child {
        final String name;
        final Process process;
        final AtomicReference<int[]> led = new AtomicReference<>(new int[0]);

        Child(String name, String election, String leaderTopic, Map<String, Object> producer, DispatcherConfig config,
              Times times) throws Exception {
            this.name = name;
            process = TakeoverScenario.startLeaderProcess(env, leaderTopic, producer, config, "384m",
                    List.of("-Dbench.shards=" + SHARDS, "-Dbench.name=" + name,
                            "-D" + LeaderProcess.ELECTION_PROPERTY + "=" + election));
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line = r.readLine(); line != null; line = r.readLine()) {
                        if (line.startsWith(ACK_LINE)) {
                            for (String pair : line.substring(ACK_LINE.length()).split(" ")) {
                                int colon = pair.indexOf(':');
                                times.ack(Long.parseLong(pair, 0, colon, 10),
                                        Long.parseLong(pair, colon + 1, pair.length(), 10));
                            }
                        } else if (line.startsWith(LEADS_LINE)) {
                            String list = line.substring(LEADS_LINE.length()).trim();
                            led.set(list.equals("-") ? new int[0]
                                    : Arrays.stream(list.split(",")).mapToInt(Integer::parseInt).toArray());
                        }
                    }
                } catch (java.io.IOException e) {
                    // the child was killed
                }
            }, name + "-output");
            reader.setDaemon(true);
            reader.start();
        }
    }

    /** Commits single-key transactions at a steady rate; notes each record's shard and commit time. */
    private final class Writer implements Runnable {
        private final String topic;
        private final int rate;
        private final String[] keys;
        private final int[] shardOfKey;
        private final Times times;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private final AtomicLong sequences = new AtomicLong();
        private volatile boolean stop;
        private Thread thread;

        Writer(String topic, int rate, String[] keys, int[] shardOfKey, Times times) {
            this.topic = topic;
            this.rate = rate;
            this.keys = keys;
            this.shardOfKey = shardOfKey;
            this.times = times;
        }

        void start() {
            thread = new Thread(this, "bench-takeover-shards-writer");
            thread.setDaemon(true);
            thread.start();
        }

        long count() {
            return sequences.get();
        }

        void stop() throws InterruptedException {
            if (stop) {
                return;
            }
            stop = true;
            thread.join(10_000);
            if (failure.get() != null) {
                throw new IllegalStateException("take-over writer failed: " + failure.get(), failure.get());
            }
        }

        @Override
        public void run() {
            int perTx = Math.max(1, rate / 500); // at most 500 transactions/s on one connection
            long interval = (long) (1e9 * perTx / rate);
            java.util.SplittableRandom random = new java.util.SplittableRandom(options.seed);
            try (Connection c = env.pool().getConnection()) {
                c.setAutoCommit(false);
                List<OutboxMessage> batch = new ArrayList<>(perTx);
                long[] seqs = new long[perTx];
                for (long due = System.nanoTime(); !stop; due += interval) {
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    batch.clear();
                    for (int i = 0; i < perTx; i++) {
                        long seq = sequences.get() + i;
                        if (seq >= times.committed.length()) {
                            throw new IllegalStateException("more records than the run has room for: " + seq);
                        }
                        int k = random.nextInt(keys.length);
                        times.shard.set((int) seq, shardOfKey[k]);
                        byte[] value = new byte[Math.max(8, options.valueBytes)];
                        ByteBuffer.wrap(value).putLong(seq);
                        batch.add(OutboxMessage.of(topic, keys[k], value));
                        seqs[i] = seq;
                    }
                    env.store().publisher().publish(c, batch);
                    c.commit();
                    long now = System.nanoTime() - times.base + 1;
                    for (int i = 0; i < perTx; i++) {
                        times.committed.set((int) seqs[i], now);
                    }
                    sequences.addAndGet(perTx);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }
    }

    // ------------------------------------------------------------------------------------------ the child JVM

    /**
     * The child's side ({@link LeaderProcess} with {@code bench.shards} above 1): a sharded dispatcher over
     * {@code store} whose shard leadership comes from a {@link KafkaShardedLeaderTransport} or, with the
     * {@code database} election, a {@link SqlShardedLeaderTransport}; it reports the shards it leads and every
     * acknowledgement on standard output, and runs until it is killed.
     */
    static void runChild(String election, Store store, KafkaMessageBroker kafka, String bootstrap, String leaderTopic,
                         DispatcherConfig config, int shards, String name) throws Exception {
        PrintStream out = System.out;
        ConcurrentLinkedQueue<long[]> acks = new ConcurrentLinkedQueue<>();
        TimingBroker broker = new TimingBroker(kafka, 0, (record, nanos) -> {
            long seq = LatencyScenario.sequence(record.message().value());
            if (seq >= 0) {
                acks.add(new long[] {seq, nanos});
            }
        });
        ShardedLeaderTransport leaders = election.equals(TakeoverScenario.DATABASE)
                ? SqlShardedLeaderTransport.builder((SqlStore) store).dispatcherConfig(config)
                        .deliveryTimeout(Duration.ofMillis(TakeoverScenario.DELIVERY_TIMEOUT_MS)).build()
                : KafkaShardedLeaderTransport.builder()
                        .bootstrapServers(bootstrap)
                        .topic(leaderTopic)
                        .shards(shards)
                        .dispatcherConfig(config)
                        .deliveryTimeoutOf(kafka)
                        .consumerProperty(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                                TakeoverScenario.SESSION_TIMEOUT_MS)
                        .consumerProperty(ConsumerConfig.CLIENT_ID_CONFIG, name + "-leader")
                        .build();
        Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).leaderTransport(leaders).name(name)
                .build();
        dispatcher.start();
        String last = "";
        while (true) { // reports every 20 ms until it is killed
            StringJoiner led = new StringJoiner(",");
            List<DispatcherHealth> health = dispatcher.shardHealth();
            for (int s = 0; s < health.size(); s++) {
                if (health.get(s).status() == DispatcherHealth.Status.LEADER) {
                    led.add(Integer.toString(s));
                }
            }
            String now = led.length() == 0 ? "-" : led.toString();
            if (!now.equals(last)) {
                out.println(LEADS_LINE + now);
                last = now;
            }
            StringBuilder line = new StringBuilder(ACK_LINE);
            int n = 0;
            for (long[] a = acks.poll(); a != null; a = acks.poll()) {
                line.append(a[0]).append(':').append(a[1]).append(' ');
                if (++n == 200) {
                    out.println(line.toString().trim());
                    line.setLength(ACK_LINE.length());
                    n = 0;
                }
            }
            if (n > 0) {
                out.println(line.toString().trim());
            }
            out.flush();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }
}
