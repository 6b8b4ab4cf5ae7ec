package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sharded harvest end to end, on the real Postgres, MySQL and Kafka: two outboxes of six shards each (one on
 * Postgres, one on MySQL), harvested side by side by three dispatcher processes ({@link ShardedDispatcherChild},
 * each a JVM of its own running one sharded dispatcher per outbox, shard leadership over
 * {@link KafkaShardedLeaderTransport}) while a writer per outbox commits over many keys and a consumer per data
 * topic ({@link TopicWatcher}) checks every record as it arrives:
 * <ol>
 *   <li>every process leads at least one shard of each outbox, and every shard has one leader;</li>
 *   <li>one process is SIGKILLed mid-stream: once the leader group has expired it (its session timeout, no
 *       sooner), its shards are led by the two others;</li>
 *   <li>a fourth process joins and is given shards of each outbox;</li>
 *   <li>the writers stop, everything drains: 0 records missing, no key's sequence going backwards, the duplicates
 *       (records in flight at the kill) counted and printed.</li>
 * </ol>
 * Both outboxes share the processes, the Kafka and the session timeout's wait, so the two databases cost little more
 * than one; the fourth process boots with the others and joins on a word, so that its JVM's start is not waited
 * for. The floor is the leader group's session timeout (6 s, the broker's minimum) plus the processes' start and
 * two rebalances: 33 s measured (with the servers already up) on the 2-core machine at a load average of 13–20,
 * up to 92 s at 50 (four builds at once).
 * Child logs go to {@code target/sharded-e2e-<process>.log}. To run it alone:
 * {@code ./mvnw -B -pl outbox-integration-tests -am verify -Dtest=ShardedKafkaEndToEndTest
 * -Dsurefire.failIfNoSpecifiedTests=false} (add {@code -Doutbox.e2e.seed=<seed>} to repeat a run's keys).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ShardedKafkaEndToEndTest {
    static final int SHARDS = 6;
    /** A child's connections per outbox: the dispatcher's shards share them. */
    static final int POOL_SIZE = 8;
    private static final int KEYS = 200;
    private static final int PER_TRANSACTION = 5;
    /** Records committed but not yet consumed above which the writers wait. */
    private static final int MAX_UNCONSUMED = 200;
    private static final Duration WAIT = Duration.ofSeconds(60);
    /**
     * The other scenarios' tuning, with a heartbeat timeout of 2 s instead of 1 s: four JVMs of a dozen shard
     * harvests each share two loaded cores here, and a leader fences itself whenever its own heartbeat takes longer
     * than the timeout to come back.
     */
    static final DispatcherConfig CONFIG = Scenario.CONFIG.toBuilder().heartbeatTimeout(Duration.ofSeconds(2)).build();
    /** The group's heartbeat interval (Kafka's, not NELI's): heartbeatTimeout / 3. */
    private static final Duration GROUP_HEARTBEAT = CONFIG.heartbeatTimeout().dividedBy(3);

    /** One process's dispatcher of one outbox: the tuning of the other end-to-end scenarios. */
    static Dispatcher dispatcher(String process, String outbox, String kind, DataSource pool, String bootstrap,
                                 String leaderTopic) {
        String name = process + "-" + outbox;
        KafkaMessageBroker kafka = KafkaMessageBroker.builder().bootstrapServers(bootstrap)
                .deliveryTimeout(Scenario.DELIVERY_TIMEOUT).property("client.id", name).build();
        KafkaShardedLeaderTransport election = KafkaShardedLeaderTransport.builder().bootstrapServers(bootstrap)
                .topic(leaderTopic)
                .shards(SHARDS)
                .dispatcherConfig(CONFIG)
                .deliveryTimeoutOf(kafka)
                .consumerProperty("session.timeout.ms", (int) Scenario.SESSION_TIMEOUT.toMillis())
                .consumerProperty("max.poll.interval.ms", (int) Scenario.SESSION_TIMEOUT.toMillis())
                .consumerProperty("client.id", name + "-leader")
                .build();
        return Dispatcher.builder(store(kind, pool), kafka).leaderTransport(election).config(CONFIG)
                .name(name).build();
    }

    static SqlStore store(String kind, DataSource pool) {
        return switch (kind) {
            case "postgres" -> PostgresStore.builder(pool).statementTimeout(Duration.ofSeconds(5)).shards(SHARDS)
                    .build();
            case "mysql" -> MySqlStore.builder(pool).statementTimeout(Duration.ofSeconds(5)).shards(SHARDS).build();
            default -> throw new IllegalArgumentException("database kind " + kind);
        };
    }

    @Test
    void threeProcessesLeadSixShardsOneIsKilledAFourthJoinsOnPostgresAndMySql() throws Exception {
        long seed = Long.getLong("outbox.e2e.seed", System.nanoTime());
        KafkaServer kafka = TestServers.kafka();
        String run = Long.toHexString(System.nanoTime() & 0xffffffL);
        long serversStarting = System.nanoTime();
        List<Outbox> outboxes = List.of(
                new Outbox("pg", "postgres", TestServers.postgres(), kafka, run, seed),
                new Outbox("my", "mysql", TestServers.mysql(), kafka, run, seed + 1));
        long began = System.nanoTime();
        List<Child> children = new ArrayList<>();
        try {
            for (Outbox o : outboxes) {
                o.start();
            }
            for (int i = 0; i < 3; i++) {
                children.add(new Child("c" + i, false, kafka, outboxes));
            }
            // The fourth process boots now, and joins later on a word: a JVM's start is no part of the scenario.
            Child joiner = new Child("c3", true, kafka, outboxes);
            children.add(joiner);
            Set<String> live = new TreeSet<>(List.of("c0", "c1", "c2"));
            awaitEach(outboxes, o -> o.spread(live), o -> "six shards over " + live);
            for (Outbox o : outboxes) {
                o.story.append(String.format("6 shards over %s %d ms after the launch", o.leads, millisSince(began)));
            }
            progress("spread over " + live + "; " + counts(outboxes));
            awaitTraffic(outboxes);

            // SIGKILL one process mid-stream: its shards move once the group has expired it.
            Child victim = children.get(1);
            Map<Outbox, Set<Integer>> itsShards = new HashMap<>();
            outboxes.forEach(o -> itsShards.put(o, o.leadsOf(victim.name)));
            Map<Outbox, Long> unconsumed = new HashMap<>();
            outboxes.forEach(o -> unconsumed.put(o, o.written.get() - o.watcher.distinct()));
            long killed = System.nanoTime();
            victim.kill();
            live.remove(victim.name);
            outboxes.forEach(o -> o.forget(victim.name));
            Map<Outbox, Long> firstMoved = awaitEach(outboxes, o -> o.ledByAnyOf(live, itsShards.get(o)),
                    o -> "a shard of the killed " + victim.name + " led by another");
            Map<Outbox, Long> allMoved = awaitEach(outboxes, o -> o.spread(live), o -> "six shards over " + live);
            for (Outbox o : outboxes) {
                long first = TimeUnit.NANOSECONDS.toMillis(firstMoved.get(o) - killed);
                o.story.append(String.format("; SIGKILL %s (leading %s, %d records committed and not yet consumed):"
                                + " its first shard led again after %d ms, all after %d ms (session timeout %d ms): %s",
                        victim.name, itsShards.get(o), unconsumed.get(o), first,
                        TimeUnit.NANOSECONDS.toMillis(allMoved.get(o) - killed), Scenario.SESSION_TIMEOUT.toMillis(),
                        o.leads));
                // G3: nobody leads a shard of the killed process before the group can have expired it.
                assertThat(Duration.ofMillis(first)).as("%s: take-over of a killed process's shard", o)
                        .isGreaterThanOrEqualTo(Scenario.SESSION_TIMEOUT.minus(GROUP_HEARTBEAT));
            }
            progress("took over from " + victim.name + "; " + counts(outboxes));
            awaitTraffic(outboxes);

            // The fourth process joins and is given shards.
            await(() -> joiner.ready, () -> joiner.name + " ready");
            long joining = System.nanoTime();
            joiner.command("START");
            live.add(joiner.name);
            Map<Outbox, Long> joined = awaitEach(outboxes, o -> o.spread(live), o -> "six shards over " + live);
            for (Outbox o : outboxes) {
                o.story.append(String.format("; %s joined and was given %s in %d ms: %s", joiner.name,
                        o.leadsOf(joiner.name), TimeUnit.NANOSECONDS.toMillis(joined.get(o) - joining), o.leads));
            }
            progress(joiner.name + " joined; " + counts(outboxes));
            awaitTraffic(outboxes);

            for (Outbox o : outboxes) {
                o.stopWriting();
            }
            awaitEach(outboxes, o -> o.watcher.reached(o.lastSeq) && o.store.backlog() == 0,
                    o -> "drained (" + o.store.backlog() + " rows left)");
            for (Outbox o : outboxes) {
                assertThat(o.writerFailure).as("%s: the writer", o).isNull();
                assertThat(o.watcher.failure()).as("%s: the consumer", o).isNull();
                assertThat(o.watcher.violations()).as("%s: per-key order (seed %d)", o, seed).isEmpty();
                assertThat(o.watcher.foreign()).as("%s: records nobody wrote", o).isEmpty();
                assertThat(o.watcher.distinct()).as("%s: every committed record consumed, none missing (seed %d)",
                        o, seed).isEqualTo(o.written.get());
                assertThat(o.store.parkedCount()).as("%s: parked", o).isZero();
                System.out.printf("sharded harvest end to end on %s (seed %d): %s; %d records written, all consumed"
                                + " (0 missing), %d copies in all, %d duplicates, 0 per-key order violations%n",
                        o.kind, seed, o.story, o.written.get(), o.watcher.records(), o.watcher.duplicates());
            }
            System.out.printf("sharded harvest end to end: %d ms (plus %d ms starting the servers)%n",
                    millisSince(began), TimeUnit.NANOSECONDS.toMillis(began - serversStarting));
        } finally {
            for (Child c : children) {
                c.kill();
            }
            for (Outbox o : outboxes) {
                o.stopWriting();
                o.close();
            }
            progress("cleaned up");
        }
    }

    /** Waits until every outbox's consumer has seen 50 more records. */
    private static void awaitTraffic(List<Outbox> outboxes) {
        Map<Outbox, Long> target = new HashMap<>();
        outboxes.forEach(o -> target.put(o, o.watcher.distinct() + 50));
        awaitEach(outboxes, o -> o.watcher.distinct() >= target.get(o), o -> "traffic (" + o.watcher.distinct()
                + " of " + target.get(o) + " consumed, " + o.written.get() + " written)");
    }

    private static String counts(List<Outbox> outboxes) {
        return outboxes.stream().map(o -> o + " " + o.written.get() + " written, " + o.watcher.distinct()
                + " consumed").toList().toString();
    }

    private static void progress(String what) {
        System.out.println(java.time.LocalTime.now() + " sharded e2e: " + what);
    }

    /**
     * Waits until {@code condition} holds for every outbox, checking them all in turn; returns when it first held
     * for each ({@link System#nanoTime()}).
     */
    private static Map<Outbox, Long> awaitEach(List<Outbox> outboxes, Predicate<Outbox> condition,
                                               Function<Outbox, String> what) {
        Map<Outbox, Long> when = new HashMap<>();
        await(() -> {
            for (Outbox o : outboxes) {
                if (!when.containsKey(o) && condition.test(o)) {
                    when.put(o, System.nanoTime());
                }
            }
            return when.size() == outboxes.size();
        }, () -> outboxes.stream().filter(o -> !when.containsKey(o)).map(o -> o + ": " + what.apply(o) + "; leads "
                + o.leads).toList().toString());
        return when;
    }

    private static void await(BooleanSupplier condition, Supplier<String> what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + WAIT + " waiting for " + what.get());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    private static long millisSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }

    /**
     * One outbox: its database, table (six shards) and data topic, its writer (one transaction of a few records at a
     * time over {@value #KEYS} keys, each key's values numbered), the consumer of its data topic, and who leads which
     * of its shards, as the processes report it.
     */
    private static final class Outbox implements AutoCloseable {
        final String label;
        final String kind;
        final JdbcServer server;
        final String url;
        final String dataTopic;
        final String leaderTopic;
        final HikariDataSource pool;
        final SqlStore store;
        final TopicWatcher watcher;
        final Map<String, Integer> lastSeq = new ConcurrentHashMap<>();
        final AtomicLong written = new AtomicLong();
        /** Process name → the shards it reported leading last. */
        final Map<String, Set<Integer>> leads = new ConcurrentHashMap<>();
        final StringBuilder story = new StringBuilder();
        private final Random random;
        private final Thread writer;
        private volatile boolean writing = true;
        volatile Throwable writerFailure;

        Outbox(String label, String kind, JdbcServer server, KafkaServer kafka, String run, long seed) {
            this.label = label;
            this.kind = kind;
            this.server = server;
            this.url = server.createDatabase("e2e_sharded_" + label);
            this.dataTopic = "e2e-sharded-" + run + "-" + label;
            this.leaderTopic = dataTopic + "-leader";
            kafka.createTopic(dataTopic, 4);
            HikariConfig hc = new HikariConfig();
            hc.setJdbcUrl(url);
            hc.setUsername(server.username());
            hc.setPassword(server.password());
            hc.setMaximumPoolSize(2);
            hc.setPoolName("sharded-writer-" + label);
            this.pool = new HikariDataSource(hc);
            this.store = store(kind, pool);
            store.createSchema();
            this.watcher = new TopicWatcher(kafka.bootstrapServers(), dataTopic);
            this.random = new Random(seed);
            this.writer = new Thread(this::write, "sharded-writer-" + label);
        }

        void start() {
            watcher.start();
            writer.start();
        }

        /** The argument that gives a {@link ShardedDispatcherChild} this outbox. */
        String spec() {
            return label + "," + kind + "," + leaderTopic + "," + server.username() + "," + url;
        }

        private void write() {
            long tx = 0;
            try {
                while (writing) {
                    if (written.get() - watcher.distinct() > MAX_UNCONSUMED) {
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                        continue;
                    }
                    String token = label + "-t" + tx++;
                    try (Connection c = pool.getConnection()) {
                        c.setAutoCommit(false);
                        Map<String, Integer> next = new HashMap<>();
                        for (int i = 0; i < PER_TRANSACTION; i++) {
                            String key = "k" + random.nextInt(KEYS);
                            int seq = next.getOrDefault(key, lastSeq.getOrDefault(key, 0)) + 1;
                            next.put(key, seq);
                            store.publisher().publish(c, OutboxMessage.builder(dataTopic, key)
                                    .value(Values.encode(seq, token)).build());
                        }
                        c.commit();
                        lastSeq.putAll(next);
                        written.addAndGet(PER_TRANSACTION);
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                }
            } catch (Throwable e) {
                writerFailure = e;
            }
        }

        void stopWriting() throws InterruptedException {
            writing = false;
            writer.join(10_000);
        }

        Set<Integer> leadsOf(String process) {
            return leads.getOrDefault(process, Set.of());
        }

        void forget(String process) {
            leads.remove(process);
        }

        /** Whether every one of {@code processes} leads a shard and every shard has exactly one leader among them. */
        boolean spread(Collection<String> processes) {
            Set<Integer> all = new TreeSet<>();
            int total = 0;
            for (String p : processes) {
                Set<Integer> mine = leadsOf(p);
                if (mine.isEmpty()) {
                    return false;
                }
                total += mine.size();
                all.addAll(mine);
            }
            return total == SHARDS && all.size() == SHARDS;
        }

        /** Whether one of {@code processes} leads one of {@code shards}. */
        boolean ledByAnyOf(Collection<String> processes, Set<Integer> shards) {
            return processes.stream().anyMatch(p -> leadsOf(p).stream().anyMatch(shards::contains));
        }

        @Override
        public void close() throws InterruptedException {
            watcher.close();
            pool.close();
        }

        @Override
        public String toString() {
            return kind;
        }
    }

    /** A {@link ShardedDispatcherChild} process and the thread reading its reports. */
    private static final class Child {
        final String name;
        final Process process;
        final Thread reader;

        volatile boolean ready;

        Child(String name, boolean hold, KafkaServer kafka, List<Outbox> outboxes) throws IOException {
            this.name = name;
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.logFile=" + Path.of("target", "sharded-e2e-" + name + ".log")
                            .toAbsolutePath(),
                    "-cp", System.getProperty("java.class.path"), ShardedDispatcherChild.class.getName(),
                    name, hold ? "hold" : "start", kafka.bootstrapServers()));
            outboxes.forEach(o -> command.add(o.spec()));
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            outboxes.forEach(o -> pb.environment().put(ShardedDispatcherChild.passwordVariable(o.label),
                    o.server.password()));
            this.process = pb.start();
            this.reader = new Thread(() -> read(outboxes), "sharded-child-" + name);
            reader.setDaemon(true);
            reader.start();
        }

        private void read(List<Outbox> outboxes) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (!line.startsWith(ShardedDispatcherChild.PREFIX)) {
                        System.out.println(name + ": " + line);
                        continue;
                    }
                    String[] words = line.substring(ShardedDispatcherChild.PREFIX.length()).split(" ");
                    if (words[0].equals("READY")) {
                        ready = true;
                    }
                    if (words.length == 3 && words[1].equals("LEADS")) {
                        Set<Integer> shards = new TreeSet<>();
                        if (!words[2].equals("-")) {
                            for (String s : words[2].split(",")) {
                                shards.add(Integer.parseInt(s));
                            }
                        }
                        outboxes.stream().filter(o -> o.label.equals(words[0])).forEach(o -> o.leads.put(name,
                                Set.copyOf(shards)));
                    }
                }
            } catch (IOException e) {
                // the process was killed
            }
        }

        void command(String command) throws IOException {
            process.getOutputStream().write((command + "\n").getBytes(StandardCharsets.UTF_8));
            process.getOutputStream().flush();
        }

        /** SIGKILL; returns once the process is gone and its last report read. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            reader.join(5_000);
        }
    }
}
