package dev.outbox.benchmarks;

import dev.outbox.OutboxMessage;
import dev.outbox.Publisher;
import dev.outbox.spi.Store;
import dev.outbox.benchmarks.peers.PeerLoad;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Our engine's crash run ({@code cursor} and {@code wal} lines of the peers' crash table): two {@link EngineChild}
 * JVMs on the benchmark's outbox table, electing their leader over the database's lease table, the first leading and
 * the second standing by; the writers (in this JVM, a business row of {@code peer_commits} and the outbox message in
 * one transaction per batch, {@link Publisher#committed()} after each commit) commit at the crash rate; halfway the
 * leader's JVM is SIGKILLed and started again at once (it becomes the standby, or the leader if it wins the lease).
 * The settings are the ones our latency lines use ({@link BenchEnvironment#dispatcherConfig()},
 * {@link BenchEnvironment#producerProperties()}) and the lease's defaults; with {@code fastFailover} (the smoke test),
 * the take-over scenario's fast timings (heartbeat timeout 1 s, delivery timeout 4 s: a lease of 5.25 s, not 15 s).
 */
final class EngineCrash {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Path out;
    private final boolean fastFailover;
    /** Which instance led after the kill, for the progress line. */
    String takenOverBy = "?";

    EngineCrash(BenchEnvironment env, BenchmarkOptions options, Path out, boolean fastFailover) {
        this.env = env;
        this.options = options;
        this.out = out;
        this.fastFailover = fastFailover;
    }

    private Map<String, Object> producer() {
        return fastFailover ? TakeoverScenario.producer(env.producerProperties()) : env.producerProperties();
    }

    /** The settings of the crash run of {@code system}, printed with the results. */
    List<String[]> settings(String system) {
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"harvest", system.equals("wal") ? "WAL (logical decoding, slot)" : "cursor (table)",
                "EngineChild, a Dispatcher in a child JVM (SIGKILLed)"});
        s.add(new String[] {"instances", "2: a leader and a standby; the killed one restarted at once",
                "the issue: a second instance where the system supports one"});
        s.add(new String[] {"election", "SqlLeaderTransport (lease table next to the outbox), its default timings"
                + " (lease max(3 hb, hb + delivery timeout + hb/4))", "the transport's defaults"});
        s.add(new String[] {"DispatcherConfig", env.dispatcherConfig().toString()
                + (fastFailover ? ", heartbeatTimeout=" + TakeoverScenario.HEARTBEAT_TIMEOUT : ""),
                fastFailover ? "our latency lines' settings, the take-over scenario's fast heartbeat"
                        + " (--crash-fast-failover)"
                        : "our latency lines' settings"});
        producer().forEach((k, v) -> s.add(new String[] {"producer " + k, String.valueOf(v),
                fastFailover ? "our latency lines' producer, the take-over scenario's delivery timeout"
                        : "our latency lines' producer (BenchEnvironment.producerProperties)"}));
        s.add(new String[] {"writers", options.writers + " threads in the benchmark's JVM: Publisher.publish + INSERT"
                + " peer_commits, one transaction, Publisher.committed() after it", "as the Spring Boot starter does"});
        return s;
    }

    private PeerChild child(String system, String name) throws Exception {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("bench.jdbc.url", env.database().jdbcUrl());
        p.put("bench.jdbc.user", env.database().server().username());
        p.put("bench.harvest", system);
        p.put("bench.name", name);
        p.put("bench.markBatchSize", Integer.toString(options.markBatchSize));
        p.put("bench.maxInFlightRecords", Integer.toString(options.maxInFlightRecords));
        p.put("bench.purgeBatchSize", Integer.toString(options.purgeBatchSize));
        if (fastFailover) {
            p.put("bench.heartbeatTimeoutMs", Long.toString(TakeoverScenario.HEARTBEAT_TIMEOUT.toMillis()));
        }
        producer().forEach((k, v) -> p.put("bench.producer." + k, String.valueOf(v)));
        return new PeerChild(name, EngineChild.class.getName(), p, env.database().server().password(),
                out.resolve("peer-" + system + ".log"));
    }

    /**
     * Runs the crash run of {@code system} ({@code cursor} or {@code wal}) into {@code topic}: writers from a little
     * after now for {@code 2 * half} ns at {@code rate}, sequence numbers from {@code base}, commit times into
     * {@code committed}; the leader killed at {@code half}; then {@code settle} waits for the redeliveries. Returns
     * the seconds from the kill to the first arrival of a record committed after it (the new leader publishing).
     */
    double run(String system, String topic, int rate, long half, long base, AtomicLongArray committed,
               PeerChecker checker, Runnable settle) throws Exception {
        Backlog backlog = new Backlog(env, options);
        Store store;
        if (system.equals("wal")) {
            backlog.resetWal();
            store = env.database().walStore();
        } else {
            backlog.reset();
            store = env.store();
        }
        TakeoverScenario.dropLeases(env);
        PeerChild standby = null;
        PeerChild restarted = null;
        PeerChild leader = child(system, system + "-a");
        try {
            standby = child(system, system + "-b");
            leader.await("READY", Duration.ofMinutes(3));
            standby.await("READY", Duration.ofMinutes(3));
            leader.send("START");
            leader.await("LEADER", Duration.ofMinutes(2));
            standby.send("START");
            standby.await("STARTED", Duration.ofMinutes(1));
            long start = System.nanoTime() + 300_000_000L;
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread writers = new Thread(() -> {
                try {
                    write(system, store, topic, rate, start, start + 2 * half, base, committed);
                } catch (Throwable e) {
                    failure.set(e);
                }
            }, "engine-crash-writers");
            writers.start();
            BenchEnvironment.pause(Duration.ofNanos(start + half - System.nanoTime()));
            leader.kill();
            long killed = System.nanoTime();
            restarted = child(system, system + "-a2");
            restarted.await("READY", Duration.ofMinutes(3));
            restarted.send("START");
            restarted.await("STARTED", Duration.ofMinutes(1));
            writers.join();
            if (failure.get() != null) {
                throw new IllegalStateException(system + " crash run: a writer failed: " + failure.get(),
                        failure.get());
            }
            settle.run();
            takenOverBy = standby.poll("LEADER") != null ? "the standby"
                    : restarted.poll("LEADER") != null ? "the restarted instance" : "neither (see the logs)";
            long first = Long.MAX_VALUE;
            for (int i = 0; i < committed.length(); i++) {
                long c = committed.get(i);
                long r = checker.consumed.get(i);
                if (c != 0 && c - killed > 0 && r != 0) {
                    first = Math.min(first, r);
                }
            }
            return first == Long.MAX_VALUE ? Double.NaN : (first - killed) / 1e9;
        } finally {
            leader.kill();
            for (PeerChild c : new PeerChild[] {standby, restarted}) {
                if (c != null) {
                    c.close();
                }
            }
            backlog.reset(); // drops the WAL harvest's slot, which would hold back the WAL of what runs next
            TakeoverScenario.dropLeases(env);
        }
    }

    /** The writers: the outbox message and the business row in one transaction per batch of the open loop. */
    private void write(String system, Store store, String topic, int rate, long start, long end, long base,
                       AtomicLongArray committed) throws Exception {
        Publisher publisher = store.publisher();
        Throwable failure = PeerLoad.run(w -> {
            try {
                Connection c = env.pool().getConnection();
                c.setAutoCommit(false);
                PreparedStatement business = c.prepareStatement("INSERT INTO peer_commits(system, seq) VALUES (?, ?)");
                return new PeerLoad.Tx() {
                    @Override
                    public void commit(String[] keys, long[] seqs, byte[][] values) throws Exception {
                        List<OutboxMessage> batch = new ArrayList<>(seqs.length);
                        for (int i = 0; i < seqs.length; i++) {
                            batch.add(OutboxMessage.of(topic, keys[i], values[i]));
                            business.setString(1, system);
                            business.setLong(2, seqs[i]);
                            business.addBatch();
                        }
                        business.executeBatch();
                        publisher.publish(c, batch);
                        c.commit();
                        publisher.committed();
                    }

                    @Override
                    public void close() throws Exception {
                        c.close();
                    }
                };
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, options.writers, rate, options.recordsPerTx(rate), start, end, PeerBenchmark.KEYS_PER_WRITER,
                options.valueBytes, options.seed, new AtomicLong(base), base, committed);
        if (failure != null) {
            throw new IllegalStateException("writer failed: " + failure, failure);
        }
    }
}
