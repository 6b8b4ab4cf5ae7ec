package dev.outbox.benchmarks;


import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.Store;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.store.sql.SqlLeaseTimings;
import dev.outbox.store.sql.SqlStore;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.GroupState;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Take-over: two dispatchers elect a leader while a writer commits rows at a steady rate; the leader is stopped, and
 * the time until the standby's first acknowledged record is measured. Two elections ({@code --elections}):
 * {@code kafka} over a consumer group ({@link KafkaLeaderTransport}) and {@code database} over a lease table next to
 * the outbox ({@link SqlLeaderTransport}). Two ways to stop the leader:
 * <ul>
 *   <li>{@code close}: {@link Dispatcher#close()} of the leader (it drains, then leaves the group or releases the
 *       lease), both dispatchers in this JVM;</li>
 *   <li>{@code crash}: the leader runs in a child JVM ({@link LeaderProcess}) that is killed with SIGKILL: no
 *       goodbye, so the standby waits for the leader's group session to expire, or for its lease to lapse.</li>
 * </ul>
 * Timings for fast fail-over (the defaults would take about 1 s after a close and 15–16 s after a crash): heartbeat
 * timeout 1 s, producer {@code delivery.timeout.ms} 4 s; Kafka's {@code session.timeout.ms} 6 s (the broker's
 * minimum by default), the lease's defaults for those ({@link #leaseTimings}: a lease of 5.25 s, renewed every
 * 250 ms, a standby trying every 500 ms). Not thread-safe: one run at a time.
 */
final class TakeoverScenario {
    static final Duration HEARTBEAT_TIMEOUT = Duration.ofSeconds(1);
    static final int DELIVERY_TIMEOUT_MS = 4_000;
    static final int REQUEST_TIMEOUT_MS = 1_997;
    static final int SESSION_TIMEOUT_MS = 6_000;
    static final String LEADER_LINE = "LEADER ";
    /** The election over a Kafka consumer group. */
    static final String KAFKA = "kafka";
    /** The election over a lease table in the outbox's database. */
    static final String DATABASE = "database";

    /** One take-over: times in seconds from stopping the leader. */
    record Result(String election, String mode, double leaderAcquired, double firstAck, long rowsLeft) {
    }

    private final BenchEnvironment env;
    private final BenchmarkOptions options;

    TakeoverScenario(BenchEnvironment env, BenchmarkOptions options) {
        this.env = env;
        this.options = options;
    }

    /** The dispatcher configuration of both contenders: the throughput settings, fast heartbeats. */
    static DispatcherConfig config(DispatcherConfig base) {
        return base.toBuilder().heartbeatTimeout(HEARTBEAT_TIMEOUT).build();
    }

    /** The producer properties of both contenders: the benchmark's, with a delivery timeout of 4 s. */
    static Map<String, Object> producer(Map<String, Object> base) {
        Map<String, Object> p = new java.util.LinkedHashMap<>(base);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DELIVERY_TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 2_000L);
        return p;
    }

    static KafkaLeaderTransport transport(String bootstrap, String leaderTopic, DispatcherConfig config,
                                          KafkaMessageBroker broker) {
        return KafkaLeaderTransport.builder()
                .bootstrapServers(bootstrap)
                .topic(leaderTopic)
                .dispatcherConfig(config)
                .deliveryTimeoutOf(broker)
                .consumerProperty(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, SESSION_TIMEOUT_MS)
                .build();
    }

    /** The lease timings of the {@code database} election with {@code config}: the SQL transport's defaults. */
    static SqlLeaseTimings leaseTimings(DispatcherConfig config) {
        return SqlLeaseTimings.of(config.heartbeatTimeout(), config.pollInterval(),
                Duration.ofMillis(DELIVERY_TIMEOUT_MS), null, null, null);
    }

    /** The {@code database} election's transport over {@code store}'s lease table. */
    static SqlLeaderTransport leaseTransport(Store store, DispatcherConfig config) {
        return SqlLeaderTransport.builder((SqlStore) store).dispatcherConfig(config)
                .deliveryTimeout(Duration.ofMillis(DELIVERY_TIMEOUT_MS)).build();
    }

    /**
     * Drops the lease table, so that a run starts with no lease left held by the dispatchers of the run before (a
     * killed JVM's lease holds until it lapses); the transports create it again.
     */
    static void dropLeases(BenchEnvironment env) {
        BenchEnvironment.execute(env.pool(), "DROP TABLE IF EXISTS " + BenchEnvironment.TABLE + "_lease");
    }

    static Dispatcher dispatcher(String election, Store store, KafkaMessageBroker broker, TimingBroker timing,
                                 String bootstrap, String leaderTopic, DispatcherConfig config, String name,
                                 DispatcherListener listener) {
        return Dispatcher.builder(store, timing)
                .config(config)
                .leaderTransport(election.equals(DATABASE) ? leaseTransport(store, config)
                        : transport(bootstrap, leaderTopic, config, broker))
                .listener(listener)
                .name(name)
                .build();
    }

    Result run(String election, String mode, int index) throws Exception {
        new Backlog(env, options).reset();
        if (election.equals(DATABASE)) {
            dropLeases(env);
        }
        String topic = env.newTopic("takeover");
        String leaderTopic = "bench-leader-" + ProcessHandle.current().pid() + "-" + mode + "-" + index;
        DispatcherConfig config = config(env.dispatcherConfig());
        Map<String, Object> producer = producer(env.producerProperties());
        String bootstrap = env.kafka().bootstrapServers();

        Writer writer = new Writer(topic, options.takeoverRate);
        writer.start();
        Dispatcher leader = null;
        Process child = null;
        Dispatcher standby = null;
        try {
            if (mode.equals("close")) {
                KafkaMessageBroker b = KafkaMessageBroker.builder().properties(producer).build();
                leader = dispatcher(election, env.store(), b, new TimingBroker(b, 0, null), bootstrap, leaderTopic, config,
                        "bench-leader", new DispatcherListener() { });
                leader.start();
                Dispatcher l = leader;
                await("the first dispatcher to lead", () -> l.isLeader(), Duration.ofSeconds(60));
            } else {
                child = startChild(election, leaderTopic, producer, config);
            }
            AtomicLong acquired = new AtomicLong();
            KafkaMessageBroker b = KafkaMessageBroker.builder().properties(producer).build();
            TimingBroker timing = new TimingBroker(b, 0, null);
            standby = dispatcher(election, env.store(), b, timing, bootstrap, leaderTopic, config, "bench-standby",
                    new DispatcherListener() {
                        @Override
                        public void leaderAcquired(UUID leaderId) {
                            acquired.compareAndSet(0, System.nanoTime());
                        }
                    });
            standby.start();
            if (election.equals(KAFKA)) {
                awaitStableGroup(bootstrap, leaderTopic);
            } // the database's standby tries the lease every acquire interval: the second below covers a few

            BenchEnvironment.pause(Duration.ofSeconds(1)); // the leader publishes steadily meanwhile
            if (acquired.get() != 0) {
                throw new IllegalStateException("the standby became leader before the leader was stopped");
            }
            long stopped = System.nanoTime();
            if (leader != null) {
                leader.close();
            } else {
                child.destroyForcibly();
                child.waitFor(30, TimeUnit.SECONDS);
            }
            await("the standby's first acknowledged record", () -> timing.firstAckNanos() != 0,
                    Duration.ofSeconds(60));
            double firstAck = (timing.firstAckNanos() - stopped) / 1e9;
            double acq = (acquired.get() - stopped) / 1e9;
            writer.stop();
            Store store = env.store();
            await("the backlog to be drained", () -> dev.outbox.spi.Store.require(store, dev.outbox.spi.Gauges.class, "the benchmark").backlog() == 0, Duration.ofSeconds(60));
            return new Result(election, mode, acq, firstAck, dev.outbox.spi.Store.require(store, dev.outbox.spi.Gauges.class, "the benchmark").backlog());
        } finally {
            writer.stop();
            if (standby != null) {
                standby.close();
            }
            if (leader != null) {
                leader.close();
            }
            if (child != null && child.isAlive()) {
                child.destroyForcibly();
            }
        }
    }

    /**
     * Starts a {@link LeaderProcess} child JVM on this benchmark's database and Kafka: the database's connection
     * settings, the leader topic, the dispatcher's batch settings and the producer's properties as {@code bench.*}
     * system properties, the database password in the environment (a command line shows in {@code ps}), its
     * standard error inherited; {@code extra} adds system properties ({@code -Dname=value}).
     */
    static Process startLeaderProcess(BenchEnvironment env, String leaderTopic, Map<String, Object> producer,
                                      DispatcherConfig config, String maxHeap, List<String> extra)
            throws java.io.IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.add("-Xmx" + maxHeap);
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=" + System.getProperty("bench.childLogLevel", "warn"));
        cmd.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
        cmd.add("-Dorg.slf4j.simpleLogger.log.org.apache.kafka=warn");
        env.database().childProperties().forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-Dbench.bootstrap=" + env.kafka().bootstrapServers());
        cmd.add("-Dbench.leaderTopic=" + leaderTopic);
        cmd.add("-Dbench.markBatchSize=" + config.markBatchSize());
        cmd.add("-Dbench.maxInFlightRecords=" + config.maxInFlightRecords());
        cmd.add("-Dbench.purgeBatchSize=" + config.purgeBatchSize());
        for (Map.Entry<String, Object> e : producer.entrySet()) {
            cmd.add("-Dbench.producer." + e.getKey() + "=" + e.getValue());
        }
        cmd.addAll(extra);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(LeaderProcess.class.getName());
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put(LeaderProcess.PASSWORD_VARIABLE, env.database().password());
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        return pb.start();
    }

    private Process startChild(String election, String leaderTopic, Map<String, Object> producer,
                               DispatcherConfig config) throws Exception {
        Process p = startLeaderProcess(env, leaderTopic, producer, config, "512m",
                List.of("-D" + LeaderProcess.ELECTION_PROPERTY + "=" + election));
        CountDownLatch leading = new CountDownLatch(1);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith(LEADER_LINE)) {
                        leading.countDown();
                    }
                }
            } catch (java.io.IOException e) {
                // the child was killed
            }
        }, "bench-child-output");
        reader.setDaemon(true);
        reader.start();
        if (!leading.await(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("the leader process did not become leader within 90 s");
        }
        return p;
    }

    /** Waits until the leader group has two members and no rebalance is under way. */
    private static void awaitStableGroup(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(10, TimeUnit.SECONDS).get(group);
                if (d != null && d.members().size() == 2 && d.groupState() == GroupState.STABLE) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("leader group '" + group + "' did not settle with two members: "
                            + d);
                }
                LockSupport.parkNanos(50_000_000L);
            }
        }
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    static void await(String what, Condition condition, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.holds()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("timed out after " + timeout + " waiting for " + what);
            }
            LockSupport.parkNanos(5_000_000L);
        }
    }

    /** Commits single-row transactions at a steady rate, so that the new leader always has rows to publish. */
    private final class Writer implements Runnable {
        private final String topic;
        private final int rate;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private volatile boolean stop;
        private Thread thread;

        Writer(String topic, int rate) {
            this.topic = topic;
            this.rate = rate;
        }

        void start() {
            thread = new Thread(this, "bench-takeover-writer");
            thread.setDaemon(true);
            thread.start();
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
            String[] keys = Backlog.keys(options.keys);
            int perTx = Math.max(1, rate / 500); // at most 500 transactions/s on one connection
            long interval = (long) (1e9 * perTx / rate);
            byte[] value = new byte[options.valueBytes];
            int n = 0;
            try (Connection c = env.pool().getConnection()) {
                c.setAutoCommit(false);
                List<OutboxMessage> batch = new ArrayList<>(perTx);
                for (long due = System.nanoTime(); !stop; due += interval) {
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    batch.clear();
                    for (int i = 0; i < perTx; i++) {
                        batch.add(OutboxMessage.of(topic, keys[n++ % keys.length], value));
                    }
                    env.store().publisher().publish(c, batch);
                    c.commit();
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }
    }
}
