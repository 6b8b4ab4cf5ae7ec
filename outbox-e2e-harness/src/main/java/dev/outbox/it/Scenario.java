package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.ParkedRecord;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One end-to-end run of the reference path: a fresh database and data topic, concurrent {@link Writers}
 * committing business rows and outbox messages, three {@link Node}s (dispatchers) electing their leader over
 * one Kafka leader group (or a lease in the database, {@link Election}), and a {@link DataWatcher} consuming the data
 * topic. The data path's broker is Kafka, or another behind the {@link DataBroker} seam (RabbitMQ in the integration
 * tests); the leader group needs Kafka. A test drives it — traffic,
 * poison records, faults — and {@link #finish()} stops the writers, waits until everything committed has been
 * consumed, closes the nodes and checks the guarantees:
 * <ul>
 *   <li>G1: every committed message (the business table says which) was consumed, with the token of the
 *       transaction that committed it; nothing a rolled-back transaction wrote was;</li>
 *   <li>G2: per key, the consumed sequence never went backwards;</li>
 *   <li>G3: leadership intervals never overlapped, and no two sends of one key were ever outstanding at once
 *       across all dispatchers;</li>
 *   <li>G4: every duplicate is a record that was in flight (sent, not yet purged) when a fault was injected,
 *       and sent again after it; duplicates are counted per fault and bounded by what was in flight then. A
 *       record whose own delivery was reported failed (a delivery timeout on a busy machine) and that was sent
 *       again is a duplicate explained by that failure, counted apart;</li>
 *   <li>G6: the poison records were parked, reported to the listener, never published, and every other key
 *       still arrived.</li>
 * </ul>
 * In {@linkplain Harvest#WAL WAL mode} the outbox is streamed from a logical replication slot; the checks mean the
 * same (see {@link #finish()} for what "the outbox is empty" means there).
 * It prints one summary line (records, duplicates, take-over times) for the CI log. Not thread-safe: one test
 * thread drives it.
 */
final class Scenario implements AutoCloseable {
    static final String DISPATCHER_USER = "outbox_dispatcher";
    private static final String DISPATCHER_PASSWORD = "dispatcher";
    private static final Logger log = LoggerFactory.getLogger(Scenario.class);

    /** The dispatchers' tuning: heartbeat timeout 1 s, so that fences and take-overs are quick to observe. */
    static final DispatcherConfig CONFIG = DispatcherConfig.builder()
            .pollInterval(Duration.ofMillis(100))
            .heartbeatTimeout(Duration.ofSeconds(1))
            .drainTimeout(Duration.ofSeconds(3))
            .ioErrorBackoff(Duration.ofMillis(50))
            .maxIoErrorBackoff(Duration.ofMillis(500))
            .build();
    /** The producers' {@code delivery.timeout.ms}. */
    static final Duration DELIVERY_TIMEOUT = Duration.ofSeconds(2);
    /**
     * The leader group's {@code session.timeout.ms} and {@code max.poll.interval.ms}: the least a broker accepts by
     * default ({@code group.min.session.timeout.ms}), above heartbeat timeout + delivery timeout + group heartbeat.
     */
    static final Duration SESSION_TIMEOUT = Duration.ofSeconds(6);
    /** The data topic's {@code max.message.bytes}: the oversized poison record is larger. */
    static final int MAX_MESSAGE_BYTES = 32 * 1024;
    static final int PARTITIONS = 4;
    static final int WRITERS = 4;
    static final int KEYS_PER_WRITER = 50;
    static final Duration WAIT = Duration.ofSeconds(90);
    /**
     * The writers hold while this many committed messages have not reached the data topic's consumer: two of a
     * dispatcher's in-flight windows, so that the leader always has a full window to send and the next one to mark
     * when a fault strikes, as it had without a limit. Without a limit the writers outran the dispatchers (on the
     * three-broker cluster by far), and a scenario spent most of its time draining and checking what they had
     * committed beyond what its steps waited for. (The inbox consumers are not waited for: they catch up at the
     * end, on what the steps needed.)
     */
    static final int MAX_BACKLOG = 2 * CONFIG.maxInFlightRecords();
    /**
     * Where duplicates go that no injected fault explains but a failed delivery of the record itself does: the
     * producer gave up on it (its delivery timeout expired on a busy machine) though the broker wrote it.
     */
    static final String FAILED_DELIVERY = "the record's own failed delivery";

    /**
     * With the WAL harvest, how long a new leader waits for the replication slot while a deposed leader still streams
     * it before it terminates that leader's WAL sender. Above the heartbeat timeout plus the drain timeout: a deposed
     * leader that is alive stops leading within the heartbeat timeout (it fences itself), drains for at most the drain
     * timeout, and only then closes its stream — terminating it earlier would cut a drain short and make the new
     * leader deliver again what it was about to confirm. Only a leader that is dead or stuck is terminated. (A
     * crashed node's WAL sender is killed with its other sessions, so a take-over after a crash never waits.)
     */
    static final Duration WAL_TAKEOVER_TIMEOUT = CONFIG.heartbeatTimeout().plus(CONFIG.drainTimeout())
            .plusSeconds(1);
    /** The logical-message prefix of the fence {@link #finish()} commits in WAL mode; not the outbox's prefix. */
    private static final String FENCE_PREFIX = "e2e_fence";

    /** How the dispatchers elect their leader. */
    enum Election {
        /** {@code KafkaLeaderTransport}: a consumer group over the scenario's leader topic (the default). */
        KAFKA,
        /**
         * {@code SqlLeaderTransport}: a lease row in the database, its lease as long as the Kafka group's session
         * ({@link #SESSION_TIMEOUT}), so that the scenarios' bounds hold for both.
         */
        DATABASE
    }

    /** Where the outbox lives: a table (the default), or the write-ahead log, streamed from a replication slot. */
    enum Harvest {
        /** The outbox table, harvested by cursor (d1, d3) and by mark (d2). */
        TABLE,
        /**
         * The WAL harvest ({@code PostgresStore.Builder.walHarvest}): writers emit logical messages, the leader
         * streams them from the scenario's slot; every node harvests by cursor (a WAL store has no mark).
         */
        WAL
    }

    /**
     * Consumers downstream of the data topic that a scenario starts with its own and checks at {@link #finish()}, such
     * as the integration tests' inbox consumers on Postgres, MySQL and MariaDB; {@link #NONE} for none.
     */
    interface Inboxes extends AutoCloseable {
        /** No downstream consumers. */
        Inboxes NONE = new Inboxes() {
        };

        /** Makes the consumers of scenario {@code scenario} on the data topic {@code topic}. */
        @FunctionalInterface
        interface Factory {
            Inboxes create(String scenario, String bootstrap, String topic);
        }

        /** Starts consuming. */
        default void start() {
        }

        /** Kills the consumers' database sessions; returns how many. */
        default int killConnections() {
            return 0;
        }

        /**
         * Waits until the consumers have applied what committed ({@code truth}: key, sequence, token), checks it and
         * returns a line for the summary, empty for none.
         */
        default String check(Map<String, Map<Integer, String>> truth, int committed, long rawDuplicates,
                             Duration wait) {
            return "";
        }

        @Override
        default void close() {
        }
    }

    /**
     * How a scenario is set up: the harvest, the dispatchers' tuning (its timings should stay those of {@link #CONFIG},
     * which the scenario's bounds assume), the downstream consumers, the writers (how many, keys each, messages a
     * second offered by all of them together, 0 for as fast as the backlog limit lets them), the backlog limit (see
     * {@link #limitBacklog}) and how long {@link #finish()} waits for the outbox to drain. Immutable.
     */
    record Setup(Harvest harvest, DispatcherConfig config, Inboxes.Factory inboxes, int writers, int keysPerWriter,
                 int messagesPerSecond, int maxBacklog, Duration drainTimeout, Election election) {
        /** The suite's scenarios: {@link #WRITERS} writers over {@link #KEYS_PER_WRITER} keys each, as fast as the
         * {@link #MAX_BACKLOG} lets them, {@link #CONFIG}, the table harvest. */
        static Setup of(Inboxes.Factory inboxes) {
            return new Setup(Harvest.TABLE, CONFIG, inboxes, WRITERS, KEYS_PER_WRITER, 0, MAX_BACKLOG, WAIT,
                    Election.KAFKA);
        }

        Setup harvest(Harvest value) {
            return new Setup(value, config, inboxes, writers, keysPerWriter, messagesPerSecond, maxBacklog,
                    drainTimeout, election);
        }

        Setup config(DispatcherConfig value) {
            return new Setup(harvest, value, inboxes, writers, keysPerWriter, messagesPerSecond, maxBacklog,
                    drainTimeout, election);
        }

        /** {@code writers} writers over {@code keysPerWriter} keys each offering {@code messagesPerSecond} in all. */
        Setup writers(int count, int keysEach, int rate) {
            return new Setup(harvest, config, inboxes, count, keysEach, rate, maxBacklog, drainTimeout, election);
        }

        Setup maxBacklog(int value) {
            return new Setup(harvest, config, inboxes, writers, keysPerWriter, messagesPerSecond, value,
                    drainTimeout, election);
        }

        Setup drainTimeout(Duration value) {
            return new Setup(harvest, config, inboxes, writers, keysPerWriter, messagesPerSecond, maxBacklog, value,
                    election);
        }

        /** The dispatchers elect their leader as {@code value} says. */
        Setup election(Election value) {
            return new Setup(harvest, config, inboxes, writers, keysPerWriter, messagesPerSecond, maxBacklog,
                    drainTimeout, value);
        }
    }

    /** A fault injected from {@code startNanos} until it had taken effect, at {@code endNanos}. */
    record Fault(String what, long startNanos, long endNanos) {
    }

    /** How long leadership took to move after {@code what}: acquired by the next leader, first record it published. */
    record Takeover(String what, String newLeader, long acquiredMillis, long firstPublishMillis) {
        @Override
        public String toString() {
            return what + " -> " + newLeader + " leads after " + acquiredMillis + " ms, publishes after "
                    + firstPublishMillis + " ms";
        }
    }

    /** What {@link #finish()} measured. */
    record Result(String name, int committed, long consumed, int lost, int orderViolations, long duplicates,
                  Map<String, Integer> duplicatesByFault, Map<String, Integer> inFlightByFault,
                  List<Takeover> takeovers, long longestGapMillis, int parked, int failuresReported) {
    }

    private final String name;
    private final long seed;
    private final String url;
    private final long started = System.nanoTime();
    private final JdbcServer pg = TestServers.postgres();
    private final DataBroker broker;
    private final String topic;
    private final String missingTopic;
    private final HikariDataSource appPool;
    private final PostgresStore adminStore;
    private final Harvest harvest;
    private final SendLog sendLog;
    private final LeadershipTimeline timeline = new LeadershipTimeline();
    private final List<Node> nodes = new ArrayList<>();
    private final Writers writers;
    private final DataWatcher watcher;
    private final Inboxes inboxes;
    private final Setup setup;
    /** How the nodes connect and are tuned (harvesting by cursor). */
    private final Settings settings;
    private final List<Fault> faults = new ArrayList<>();
    private final List<Takeover> takeovers = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    /** Messages committed by {@link #openLate} transactions (not by the writers). */
    private int lateCommitted;
    private final List<Late> lates = new ArrayList<>();
    private boolean finished;
    private boolean slotDropped;
    /** From the start of the set-up (servers started on first use, databases, topics, clients) to the writers'. */
    private long setUpMillis;

    private Scenario(String name, long seed, DataBroker broker, Setup setup) {
        if (setup.election() == Election.KAFKA && broker.kafkaBootstrap() == null) {
            throw new IllegalArgumentException("the Kafka leader group needs Kafka; elect in the database on "
                    + broker.name());
        }
        this.name = name;
        this.seed = seed;
        this.broker = broker;
        this.setup = setup;
        this.harvest = setup.harvest();
        DispatcherConfig config = setup.config();
        this.sendLog = new SendLog(harvest == Harvest.WAL);
        String suffix = Long.toHexString(seed & 0xffffffL);
        this.url = pg.createDatabase("e2e_" + name);
        pg.createUser(DISPATCHER_USER, DISPATCHER_PASSWORD);
        HikariConfig hc = new HikariConfig();
        if (harvest == Harvest.WAL) {
            // Logical decoding sees a commit only once its WAL is flushed; the embedded server runs with
            // synchronous_commit off (the WAL writer flushes every 200 ms). The application commits as a production
            // server's default does.
            hc.setConnectionInitSql("SET synchronous_commit = on");
        }
        hc.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "ApplicationName=e2e_" + name + "_app");
        hc.setUsername(pg.username());
        hc.setPassword(pg.password());
        hc.setMaximumPoolSize(setup.writers() + 2);
        hc.setPoolName("pool-e2e-" + name + "-app");
        this.appPool = new HikariDataSource(hc);
        PostgresStore.Builder admin = PostgresStore.builder(appPool);
        if (harvest == Harvest.WAL) {
            // The dispatchers stream the slot as their own user: a replication connection needs REPLICATION (the
            // test user is a superuser anyway; this says what a real deployment grants).
            execute("ALTER ROLE " + DISPATCHER_USER + " REPLICATION");
            admin.walHarvest(WalHarvest.builder(url).user(pg.username()).password(pg.password())
                    .property("ApplicationName", "e2e_" + name + "_app").build());
        }
        this.adminStore = admin.build();
        adminStore.createSchema(); // with the WAL harvest: the slot and the publication too
        execute(Writers.EVENTS_DDL);

        this.topic = "e2e-" + name + "-" + suffix;
        this.missingTopic = "e2e-" + name + "-missing-" + suffix;
        broker.createTopic(topic, PARTITIONS, MAX_MESSAGE_BYTES);

        this.settings = new Settings(url, DISPATCHER_USER, DISPATCHER_PASSWORD, broker,
                topic + "-leader", config, DELIVERY_TIMEOUT, SESSION_TIMEOUT, harvest == Harvest.WAL, setup.election());
        for (int i = 1; i <= 3; i++) {
            // Table: d2 harvests by mark, d1 and d3 by cursor (the default): every scenario proves both harvests, and
            // the hand-overs between them that a rolling upgrade makes. WAL: all by cursor (there is no mark).
            Settings own = i == 2 && harvest == Harvest.TABLE ? settings.withHarvest(DispatcherConfig.Harvest.MARK)
                    : settings;
            nodes.add(new Node("d" + i, "e2e_" + name + "_d" + i, own, sendLog, timeline));
        }
        this.watcher = broker.newWatcher(topic);
        this.inboxes = setup.inboxes().create(name, broker.kafkaBootstrap(), topic);
        long pauseMicros = Long.getLong("outbox.e2e.writerPauseMicros", 2_000);
        this.writers = new Writers(appPool, adminStore.publisher(), topic, setup.writers(), setup.keysPerWriter(),
                pauseMicros, setup.messagesPerSecond(), seed);
        limitBacklog(true);
    }

    /**
     * Sets up a scenario named {@code name} (lower case, digits, underscores) with the downstream consumers
     * {@code inboxes} and starts everything.
     */
    static Scenario start(String name, long seed, Inboxes.Factory inboxes) {
        return start(name, seed, TestServers.kafka(), Setup.of(inboxes));
    }

    /** {@link #start(String, long, Inboxes.Factory)} with the outbox harvested as {@code harvest} says. */
    static Scenario start(String name, long seed, Harvest harvest, Inboxes.Factory inboxes) {
        return start(name, seed, TestServers.kafka(), Setup.of(inboxes).harvest(harvest));
    }

    /**
     * {@link #start(String, long, Inboxes.Factory)} on the Kafka cluster {@code kafka}, with the dispatchers tuned by
     * {@code config} instead of {@link #CONFIG} (its timings should stay those of {@link #CONFIG}, which the
     * scenario's bounds assume).
     */
    static Scenario start(String name, long seed, KafkaServer kafka, DispatcherConfig config,
                          Inboxes.Factory inboxes) {
        return start(name, seed, kafka, Setup.of(inboxes).config(config));
    }

    /** Sets up a scenario named {@code name} on the Kafka cluster {@code kafka} as {@code setup} says. */
    static Scenario start(String name, long seed, KafkaServer kafka, Setup setup) {
        return start(name, seed, new KafkaDataBroker(kafka), setup);
    }

    /**
     * Sets up a scenario named {@code name} whose dispatchers publish to {@code broker}, as {@code setup} says (on a
     * broker other than Kafka, with {@link Election#DATABASE}).
     */
    static Scenario start(String name, long seed, DataBroker broker, Setup setup) {
        Scenario s = new Scenario(name, seed, broker, setup);
        try {
            s.watcher.start();
            s.inboxes.start();
            s.nodes.forEach(Node::start);
            s.setUpMillis = millisSince(s.started);
            s.writers.start();
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        log.info("scenario {} started (seed {}, {}, {} harvest, {} election)", name, seed, broker.name(),
                setup.harvest(), setup.election());
        return s;
    }

    /** The downstream consumers. */
    Inboxes inboxes() {
        return inboxes;
    }

    JdbcServer database() {
        return pg;
    }

    /** The Kafka cluster of a scenario on Kafka. */
    KafkaServer kafka() {
        if (broker instanceof KafkaDataBroker k) {
            return k.server();
        }
        throw new IllegalStateException(this + " runs on " + broker.name() + ", not Kafka");
    }

    /** The data path's broker. */
    DataBroker broker() {
        return broker;
    }

    /** The data topic. */
    String topic() {
        return topic;
    }

    LeadershipTimeline timeline() {
        return timeline;
    }

    /** Adds a line to the scenario's summary. */
    void note(String line) {
        notes.add(line);
    }

    // ------------------------------------------------------------------------------------------ driving

    /** Traffic, then the two poison records (parked), then more traffic: what every scenario does before a fault. */
    void warmUp() {
        awaitTraffic(1_000);
        injectPoison();
        awaitTraffic(1_000);
    }

    /**
     * From now on the writers go on through failed transactions (the database itself is about to fail), reading
     * back what committed; the summary says how many failed.
     */
    void tolerateWriterFailures() {
        writers.tolerateFailures();
    }

    /**
     * Whether the writers hold while {@link Setup#maxBacklog()} committed messages have not reached the data topic's
     * consumer (the default), or write on regardless, e.g. to let a backlog grow while Kafka is away.
     */
    void limitBacklog(boolean limit) {
        writers.limitBacklog(this::backlog, limit ? setup.maxBacklog() : Integer.MAX_VALUE);
    }

    /** Committed messages that the data topic's consumer has not seen yet. */
    int waiting() {
        return backlog();
    }

    private int backlog() {
        return (int) Math.max(0, committed() - watcher.distinct());
    }

    /** The writers. */
    Writers writers() {
        return writers;
    }

    /** Messages committed so far, by the writers and by {@link #openLate late transactions}. */
    private int committed() {
        return writers.committed() + lateCommitted;
    }

    /** Failures the dispatchers have reported to their listeners so far. */
    int failuresReported() {
        return nodes.stream().mapToInt(n -> n.failures.get()).sum();
    }

    /** Waits until exactly one live node leads, and returns it. */
    Node awaitLeader() {
        await(() -> live().stream().filter(Node::isLeader).count() == 1, WAIT, () -> "one leader among " + live()
                + "\n" + timeline);
        return live().stream().filter(Node::isLeader).findFirst().orElseThrow();
    }

    List<Node> live() {
        return nodes.stream().filter(n -> !n.crashed() && n.dispatcher.state() != Dispatcher.State.CLOSED)
                .toList();
    }

    /** Waits until the consumer has seen {@code records} more committed messages. */
    void awaitTraffic(int records) {
        long target = watcher.distinct() + records;
        await(() -> watcher.distinct() >= target, WAIT, () -> "consumer progress to " + target + ", at "
                + watcher.distinct() + "; leaders " + live() + "\n" + timeline);
    }

    /**
     * Commits two poison messages in one transaction — one larger than the data topic's {@code max.message.bytes},
     * one for a topic that does not exist (the broker does not create topics) — and waits until both are parked.
     */
    void injectPoison() {
        try (Connection c = appPool.getConnection()) {
            c.setAutoCommit(false);
            adminStore.publisher().publish(c, List.of(
                    OutboxMessage.of(topic, "poison-big", new byte[2 * MAX_MESSAGE_BYTES]),
                    OutboxMessage.of(missingTopic, "poison-missing", "never deliverable")));
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException("could not write the poison records", e);
        }
        long t0 = System.nanoTime();
        log.info("{}: poison records committed", name);
        await(() -> adminStore.parked(10).size() >= 2, WAIT, () -> "both poison records parked; parked: "
                + adminStore.parked(10));
        StringBuilder how = new StringBuilder("poison records parked within " + millisSince(t0) + " ms (");
        for (SendLog.Send p : sendLog.sends()) {
            if (p.key.startsWith("poison")) {
                how.append(p.key).append(" sent by ").append(p.node).append(" at +")
                        .append(TimeUnit.NANOSECONDS.toMillis(p.sentNanos - t0)).append(" ms, failed ")
                        .append(TimeUnit.NANOSECONDS.toMillis(p.doneNanos() - p.sentNanos)).append(" ms later, ");
            }
        }
        how.setLength(how.length() - 2);
        note(how.append(')').toString());
    }

    /**
     * Ends {@code victim}'s leadership with {@code kill} (the victim must lead) and measures the take-over: from
     * the moment {@code kill} starts until another node acquires leadership and until it publishes its first
     * record (G5).
     */
    Takeover handOver(String what, Node victim, Runnable kill) {
        assertThat(victim.isLeader()).as("%s leads", victim.name).isTrue();
        List<Node> survivors = live().stream().filter(n -> n != victim).toList();
        long t0 = System.nanoTime();
        survivors.forEach(n -> n.broker.armFirstAck(t0));
        timeline.add(victim.name, LeadershipTimeline.Kind.STOPPED, null);
        kill.run();
        faults.add(new Fault(what, t0, System.nanoTime()));
        await(() -> survivors.stream().anyMatch(n -> n.broker.firstAckAfterArm() != 0), WAIT,
                () -> "a record published by one of " + survivors + " after " + what + "\n" + timeline);
        Node next = survivors.stream().filter(n -> n.broker.firstAckAfterArm() != 0)
                .min(Comparator.comparingLong(n -> n.broker.firstAckAfterArm())).orElseThrow();
        LeadershipTimeline.Event acquired = timeline.first(t0, e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED
                && e.who().equals(next.name));
        assertThat(acquired).as("%s's acquisition in the timeline\n%s", next.name, timeline).isNotNull();
        Takeover t = new Takeover(what, next.name, TimeUnit.NANOSECONDS.toMillis(acquired.nanos() - t0),
                TimeUnit.NANOSECONDS.toMillis(next.broker.firstAckAfterArm() - t0));
        takeovers.add(t);
        log.info("{}: {}", name, t);
        return t;
    }

    /**
     * Starts one more dispatcher (harvesting by cursor, the default), e.g. to replace one that was closed or crashed;
     * returns it.
     */
    Node addNode() {
        int i = nodes.size() + 1;
        Node n = new Node("d" + i, "e2e_" + name + "_d" + i, settings, sendLog, timeline);
        nodes.add(n);
        n.start();
        return n;
    }

    /** What {@link #outage} measured, in milliseconds; {@code noticedMillis} is -1 if no failure was reported. */
    record Outage(long tookEffectMillis, long noticedMillis, long endedMillis, long resumedMillis) {
        @Override
        public String toString() {
            return String.format("took effect in %d ms, the dispatchers failed on it after %s, ended in %d ms,"
                    + " purging again %d ms after it ended", tookEffectMillis,
                    noticedMillis < 0 ? "- (no failure reported)" : noticedMillis + " ms", endedMillis,
                    resumedMillis);
        }
    }

    /**
     * A fault of the dispatchers' surroundings (the database stopped, read-only, frozen): {@code begin} under load,
     * held until the dispatchers have reported a failure or for at most {@code noticeBound}, then {@code end}; recorded
     * as the fault {@code what}. Returns its times, with how long purging took to resume after it ended.
     */
    Outage outage(String what, Runnable begin, Runnable end, Duration noticeBound) {
        int failuresBefore = failuresReported();
        long[] times = {0, -1, 0};
        fault(what, () -> {
            long t0 = System.nanoTime();
            try {
                begin.run();
                times[0] = millisSince(t0);
                if (Await.until(() -> failuresReported() > failuresBefore, noticeBound)) {
                    times[1] = millisSince(t0);
                }
            } finally {
                long t1 = System.nanoTime();
                end.run();
                times[2] = millisSince(t1);
            }
        });
        long armed = armPurges();
        long resumed = awaitPurgeAfter(armed, "the end of '" + what + "'");
        return new Outage(times[0], times[1], times[2], resumed);
    }

    /** Closes {@code node}'s dispatcher: stops marking, drains, flushes, leaves the group. */
    void closeOrderly(Node node) {
        node.close();
    }

    /** Crashes {@code node} (see {@link Node#crash}). */
    void crash(Node node) {
        node.crash(pg);
    }

    /**
     * Injects a fault by running {@code action}, and records when it started and when {@code action} returned
     * (the fault has taken effect), to attribute duplicates.
     */
    void fault(String what, Runnable action) {
        long t0 = System.nanoTime();
        action.run();
        faults.add(new Fault(what, t0, System.nanoTime()));
    }

    /** Arms every live node to note its first acknowledgement from now on. */
    long armAll() {
        long t = System.nanoTime();
        live().forEach(n -> n.broker.armFirstAck(t));
        return t;
    }

    /** Milliseconds from {@code armedAt} to the first acknowledgement any live node received after it. */
    long awaitFirstPublishAfter(long armedAt, String what) {
        await(() -> live().stream().anyMatch(n -> n.broker.firstAckAfterArm() != 0), WAIT,
                () -> "a record published after " + what + "; leaders " + live() + "\n" + timeline);
        long first = live().stream().mapToLong(n -> n.broker.firstAckAfterArm()).filter(v -> v != 0).min()
                .orElseThrow();
        return TimeUnit.NANOSECONDS.toMillis(first - armedAt);
    }

    /**
     * Milliseconds from {@code armedAt} to the first acknowledgement any live node received for a record it sent after
     * {@code armedAt}: when acknowledgements flow again for new sends, not only for those already on their way.
     */
    long awaitFirstAckOfSendAfter(long armedAt, String what) {
        await(() -> live().stream().anyMatch(n -> n.broker.firstAckOfSendAfterArm() != 0), WAIT,
                () -> "a record sent and acknowledged after " + what + "; leaders " + live() + "\n" + timeline);
        long first = live().stream().mapToLong(n -> n.broker.firstAckOfSendAfterArm()).filter(v -> v != 0).min()
                .orElseThrow();
        return TimeUnit.NANOSECONDS.toMillis(first - armedAt);
    }

    /** Waits until a send that any node made, whenever, has been reported failed after {@code nanos}. */
    void awaitFailedSendAfter(long nanos, String what) {
        await(() -> sendLog.sends().stream().anyMatch(x -> x.doneNanos() != 0 && !x.acknowledged()
                && x.doneNanos() - nanos > 0), WAIT, () -> "a delivery failed after " + what + "\n" + timeline);
    }

    /**
     * Waits until the outbox has stopped publishing because of a fault: no live node leads (the leader fenced itself
     * and nobody took over), or a leader's {@code health()} reports an outage; says which, and when.
     */
    String awaitPaused(String what) {
        long t0 = System.nanoTime();
        String[] how = new String[1];
        await(() -> {
            for (Node n : live()) {
                if (n.isLeader() && n.dispatcher.health().outageSince().isPresent()) {
                    how[0] = n.name + " leads and reports an outage (health) since "
                            + n.dispatcher.health().outageSince().get();
                    return true;
                }
            }
            if (live().stream().noneMatch(Node::isLeader)) {
                how[0] = "no dispatcher leads (" + live() + ")";
                return true;
            }
            return false;
        }, WAIT, () -> "the outbox paused after " + what + "; leaders " + live() + "\n" + timeline);
        return how[0] + " " + millisSince(t0) + " ms after the delivery failed";
    }

    /** Waits until the writers have committed {@code messages} more messages. */
    void awaitCommitted(int messages) {
        int target = writers.committed() + messages;
        await(() -> writers.committed() >= target, WAIT, () -> "writers committed " + target + ", at "
                + writers.committed());
    }

    /** Starts watching for the first purge that starts from now on; returns now. */
    long armPurges() {
        long t = System.nanoTime();
        sendLog.armPurges(t);
        return t;
    }

    /** Milliseconds from {@code armedAt} until a purge started after it committed. */
    long awaitPurgeAfter(long armedAt, String what) {
        await(() -> sendLog.firstPurgeAfterArm() != 0, WAIT, () -> "a purge after " + what + "\n" + timeline);
        return TimeUnit.NANOSECONDS.toMillis(sendLog.firstPurgeAfterArm() - armedAt);
    }

    // ------------------------------------------------------------------------------------------ late commits

    /**
     * Opens {@code transactions} transactions that each emit, at once, one message for each of the keys
     * {@code late-k0} … {@code late-k<keys-1>} (and insert them into the business table), and hold them open:
     * the test commits them later, while the writers go on, with {@link Late#commitNext()} — in the reverse of the
     * order they were opened, so the later a transaction wrote its messages, the earlier it commits. The sequence
     * numbers follow the commit order (the last one opened carries {@code #0}): per key, delivery must follow the
     * commits, not the writes.
     */
    Late openLate(int transactions, int keys) throws SQLException {
        Late late = new Late(transactions, keys);
        lates.add(late);
        return late;
    }

    /** The transactions of {@link #openLate}. Not thread-safe. */
    final class Late implements AutoCloseable {
        private final List<Connection> open = new ArrayList<>();
        private final int keys;
        private String emitted;

        private Late(int transactions, int keys) throws SQLException {
            this.keys = keys;
            javax.sql.DataSource ds = pg.dataSource(url + (url.contains("?") ? "&" : "?") + "ApplicationName=e2e_"
                    + name + "_late");
            for (int i = 0; i < transactions; i++) {
                Connection c = ds.getConnection();
                open.add(c);
                c.setAutoCommit(false);
                int seq = transactions - 1 - i;
                String token = "late" + i;
                List<OutboxMessage> batch = new ArrayList<>();
                try (java.sql.PreparedStatement events = c.prepareStatement(
                        "INSERT INTO e2e_events (key, seq, token) VALUES (?, ?, ?)")) {
                    for (int k = 0; k < keys; k++) {
                        events.setString(1, "late-k" + k);
                        events.setInt(2, seq);
                        events.setString(3, token);
                        events.addBatch();
                        batch.add(OutboxMessage.builder(topic, "late-k" + k).value(Values.encode(seq, token))
                                .header("token", token).build());
                    }
                    events.executeBatch();
                }
                adminStore.publisher().publish(c, batch);
                try (Statement st = c.createStatement();
                     ResultSet rs = st.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
                    rs.next();
                    emitted = rs.getString(1); // after this transaction's messages (in WAL mode, emitted)
                }
            }
            log.info("{}: {} late transactions opened, written up to WAL {}", name, transactions, emitted);
        }

        /** A WAL position after every message the late transactions wrote. */
        String writtenBefore() {
            return emitted;
        }

        /** How many are still open. */
        int open() {
            return open.size();
        }

        /** Commits the transaction opened last of those still open. */
        void commitNext() throws SQLException {
            Connection c = open.remove(open.size() - 1);
            try (c; Statement st = c.createStatement()) {
                st.execute("SET LOCAL synchronous_commit = on");
                c.commit();
            }
            lateCommitted += keys;
            log.info("{}: a late transaction committed, {} still open", name, open.size());
        }

        /** Rolls back what is still open. */
        @Override
        public void close() {
            for (Connection c : open) {
                try (c) {
                    c.rollback();
                } catch (SQLException e) {
                    log.warn("{}: rolling back a late transaction failed", name, e);
                }
            }
            open.clear();
        }
    }

    // ------------------------------------------------------------------------------------------ WAL harvest

    /** The slot of the WAL harvest. */
    String slot() {
        return adminStore.slot();
    }

    /**
     * The WAL senders (backend type {@code walsender}) of the scenario's database that stream on behalf of
     * {@code client} (an {@code ApplicationName}), or of any node when null: pid → application name.
     */
    Map<Integer, String> walSenders(String client) {
        Map<Integer, String> out = new TreeMap<>();
        try (Connection c = appPool.getConnection(); java.sql.PreparedStatement st = c.prepareStatement(
                "SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'walsender'"
                        + " AND datname = current_database() AND application_name LIKE ?")) {
            st.setString(1, client != null ? client : "e2e\\_" + name + "\\_d%");
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getInt(1), rs.getString(2));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not list the WAL senders", e);
        }
        return out;
    }

    /** Waits until the slot's confirmed position has passed WAL position {@code lsn} (text, e.g. {@code 0/1A2B}). */
    void awaitConfirmedPast(String lsn) {
        BooleanSupplier past = confirmedPast(lsn);
        await(past, WAIT, () -> "slot " + slot() + " confirmed past " + lsn + ": " + outboxState());
    }

    private BooleanSupplier confirmedPast(String lsn) {
        return () -> {
            try (Connection c = appPool.getConnection(); java.sql.PreparedStatement st = c.prepareStatement(
                    "SELECT confirmed_flush_lsn >= ?::pg_lsn FROM pg_replication_slots WHERE slot_name = ?")) {
                st.setString(1, lsn);
                st.setString(2, slot());
                try (ResultSet rs = st.executeQuery()) {
                    return rs.next() && rs.getBoolean(1);
                }
            } catch (SQLException e) {
                throw new IllegalStateException("could not read slot " + slot(), e);
            }
        };
    }

    /**
     * Commits a logical message of a prefix that is not the outbox's, after the writers' last transaction, and
     * returns its WAL position: the leader skips it, and confirms past it once every message committed before it
     * is finished.
     */
    private String commitFence() throws SQLException {
        try (Connection c = appPool.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_logical_emit_message(true, '" + FENCE_PREFIX + "', '')::text")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** What is left in the outbox, for messages: the table's backlog, or the slot's state. */
    private String outboxState() {
        if (harvest == Harvest.TABLE) {
            return "backlog " + adminStore.backlog();
        }
        try (Connection c = appPool.getConnection(); java.sql.PreparedStatement st = c.prepareStatement(
                "SELECT confirmed_flush_lsn::text, active_pid, pg_current_wal_lsn()::text FROM pg_replication_slots"
                        + " WHERE slot_name = ?")) {
            st.setString(1, slot());
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? "slot " + slot() + " confirmed " + rs.getString(1) + ", streamed by pid "
                        + rs.getObject(2) + ", WAL at " + rs.getString(3) : "slot " + slot() + " missing";
            }
        } catch (SQLException e) {
            return "slot " + slot() + " unreadable: " + e.getMessage();
        }
    }

    /** Drops the scenario's slot and publication once nobody streams it, and checks that it is gone. */
    private void dropSlot() {
        await(() -> {
            adminStore.dropSlot(); // fails while a WAL sender still streams the slot: ask again
            return true;
        }, WAIT, () -> "slot " + slot() + " dropped: " + outboxState() + ", WAL senders " + walSenders(null));
        try (Connection c = appPool.getConnection(); java.sql.PreparedStatement st = c.prepareStatement(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name = ?")) {
            st.setString(1, slot());
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).as("slot %s left behind", slot()).isZero();
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not look for slot " + slot(), e);
        }
        slotDropped = true;
    }

    // ------------------------------------------------------------------------------------------ checking

    /**
     * Stops the writers, waits until every committed message was consumed and the outbox is empty, closes the
     * nodes, prints the numbers, and asserts G1–G4 and G6. In WAL mode the outbox is empty once the slot confirmed
     * past a fence committed after the writers stopped; then the slot is dropped.
     */
    Result finish() throws Exception {
        finished = true;
        writers.close();
        if (writers.failedTransactions() > 0) {
            note(writers.failedTransactions() + " writer transactions failed during the faults");
        }
        long writingEnded = System.nanoTime();
        Map<String, Map<Integer, String>> truth = committedMessages();
        int committed = truth.values().stream().mapToInt(Map::size).sum();
        Map<String, Integer> lastCommitted = new HashMap<>();
        truth.forEach((k, seqs) -> lastCommitted.put(k, seqs.size() - 1));

        // The outbox is empty: no row left in the table; with the WAL harvest, the slot confirmed past a fence
        // committed after the writers' last transaction, so the leader finished (acknowledged or parked) every message.
        BooleanSupplier empty = harvest == Harvest.WAL ? confirmedPast(commitFence()) : () -> adminStore.backlog() == 0;
        await(() -> watcher.reached(lastCommitted) && empty.getAsBoolean(), setup.drainTimeout(),
                () -> "every committed message consumed (" + watcher.distinct() + " of " + committed
                        + ") and the outbox empty (" + outboxState() + "); leaders " + live() + "\n" + timeline);
        long drainMillis = millisSince(writingEnded);
        for (Node n : nodes) {
            if (n.dispatcher.state() != Dispatcher.State.CLOSED) {
                if (!n.crashed()) {
                    timeline.add(n.name, LeadershipTimeline.Kind.STOPPED, null);
                }
                n.close();
            }
        }
        BooleanSupplier atEnd = broker.consumedAll(topic, watcher);
        await(atEnd, WAIT, () -> "the consumer at the end of the topic on " + broker.name() + ": "
                + watcher.records() + " records consumed");
        watcher.close();
        if (watcher.redelivered() > 0) {
            note(watcher.redelivered() + " copies delivered to the consumer again after its own connection was lost"
                    + " (its acknowledgements lost with it: the consumer's repeats, not the outbox's duplicates)");
        }
        if (harvest == Harvest.WAL) {
            dropSlot(); // a slot left behind would retain WAL for every later test on the shared server
        }

        // G1: everything committed arrived, as committed; nothing else did.
        Map<String, List<DataWatcher.Copy>> copies = watcher.copies();
        List<String> missing = new ArrayList<>();
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, Map<Integer, String>> e : truth.entrySet()) {
            Map<Integer, String> got = new HashMap<>();
            for (DataWatcher.Copy c : copies.getOrDefault(e.getKey(), List.of())) {
                String before = got.putIfAbsent(c.seq(), c.token());
                if (before != null && !before.equals(c.token())) {
                    wrong.add(e.getKey() + "#" + c.seq() + " arrived as " + before + " and " + c.token());
                }
            }
            for (Map.Entry<Integer, String> m : e.getValue().entrySet()) {
                String token = got.remove(m.getKey());
                if (token == null) {
                    missing.add(e.getKey() + "#" + m.getKey());
                } else if (!token.equals(m.getValue())) {
                    wrong.add(e.getKey() + "#" + m.getKey() + " arrived from " + token + ", committed by "
                            + m.getValue());
                }
            }
            got.forEach((seq, token) -> wrong.add(e.getKey() + "#" + seq + " (" + token + ") was never committed"));
        }
        Set<String> unknownKeys = copies.keySet().stream().filter(k -> !truth.containsKey(k))
                .collect(Collectors.toSet());

        // G4: duplicates only for records in flight at a fault: sent before the fault had taken effect, neither
        // failed nor purged before it began, and sent again after it began.
        List<SendLog.Send> sends = sendLog.sends();
        Map<String, Integer> dupsByFault = new LinkedHashMap<>();
        Map<String, Integer> inFlightByFault = new LinkedHashMap<>();
        Map<String, Long> purged = sendLog.purgeTimes();
        for (Fault f : faults) {
            dupsByFault.put(f.what(), 0);
            inFlightByFault.put(f.what(), inFlightDuring(f, sends, purged));
        }
        Map<String, List<SendLog.Send>> sendsByRecord = sends.stream().filter(x -> x.seq >= 0)
                .collect(Collectors.groupingBy(x -> x.key + "#" + x.seq));
        List<String> unexplained = new ArrayList<>();
        long duplicates = 0;
        for (Map.Entry<String, List<DataWatcher.Copy>> e : copies.entrySet()) {
            Map<Integer, Integer> count = new TreeMap<>();
            e.getValue().forEach(c -> count.merge(c.seq(), 1, Integer::sum));
            for (Map.Entry<Integer, Integer> c : count.entrySet()) {
                int extra = c.getValue() - 1;
                if (extra == 0) {
                    continue;
                }
                duplicates += extra;
                List<SendLog.Send> ofRecord = sendsByRecord.getOrDefault(e.getKey() + "#" + c.getKey(), List.of());
                long first = ofRecord.stream().mapToLong(x -> x.sentNanos).min().orElse(Long.MAX_VALUE);
                long last = ofRecord.stream().mapToLong(x -> x.sentNanos).max().orElse(Long.MIN_VALUE);
                Fault cause = faults.stream().filter(f -> f.endNanos() - first > 0 && last - f.startNanos() > 0)
                        .reduce((a, b) -> b).orElse(null);
                // A send reported failed (a delivery timeout, say) may still have landed: the record was in flight
                // at a failure of its own, and was sent again after it.
                boolean ownFailure = ofRecord.stream().anyMatch(x -> x.doneNanos() != 0 && !x.acknowledged()
                        && ofRecord.stream().anyMatch(y -> y.sentNanos - x.doneNanos() >= 0));
                if (ofRecord.size() < c.getValue() || (cause == null && !ownFailure)) {
                    unexplained.add(e.getKey() + "#" + c.getKey() + " consumed " + c.getValue() + " times, sends "
                            + ofRecord);
                } else if (cause != null) {
                    dupsByFault.merge(cause.what(), extra, Integer::sum);
                } else {
                    dupsByFault.merge(FAILED_DELIVERY, extra, Integer::sum);
                }
            }
        }

        List<ParkedRecord> parked = adminStore.parked(100);
        int failures = nodes.stream().mapToInt(n -> n.failures.get()).sum();
        Result r = new Result(name, committed, watcher.records(), missing.size(), watcher.violations().size(),
                duplicates, dupsByFault, inFlightByFault,
                List.copyOf(takeovers), watcher.longestGapMillis(), parked.size(), failures);
        print(r, drainMillis);

        assertThat(watcher.failure()).as("consumer failure").isNull();
        assertThat(committed).as("messages committed").isEqualTo(committed());
        // G2: per key, never an older record after a newer one.
        assertThat(watcher.violations()).as("G2: records older than their key's latest (seed %d)", seed).isEmpty();
        // G1
        assertThat(missing).as("G1: committed messages never consumed (seed %d)", seed).isEmpty();
        assertThat(wrong).as("G1: consumed messages that differ from what committed (seed %d)", seed).isEmpty();
        assertThat(unknownKeys).as("keys nobody committed").isEmpty();
        // G6: the poison records were parked, reported and never published; nothing else was parked.
        assertThat(parked).extracting(ParkedRecord::key).containsExactlyInAnyOrder("poison-big", "poison-missing");
        assertThat(parked).allSatisfy(p -> assertThat(p.reason()).contains("permanent"));
        if (harvest == Harvest.TABLE) {
            assertThat(nodes.stream().flatMap(n -> n.parked.stream()).map(ParkedRecord::id).distinct().sorted()
                    .toList()).as("parked records reported to the listener")
                    .isEqualTo(parked.stream().map(ParkedRecord::id).sorted().toList());
        } else {
            // With the WAL harvest the listener is told the id the leader's stream gave the record, while the parked
            // table holds it under its WAL position (what replay takes): they differ, so compare topic and key.
            assertThat(nodes.stream().flatMap(n -> n.parked.stream()).map(p -> p.topic() + "/" + p.key()).distinct()
                    .sorted().toList()).as("parked records reported to the listener")
                    .isEqualTo(parked.stream().map(p -> p.topic() + "/" + p.key()).sorted().toList());
        }
        assertThat(watcher.foreign()).as("G6: poison records on the data topic").isEmpty();
        // G3: one leader at a time; per key, one send outstanding at a time across every dispatcher.
        timeline.assertExclusive();
        assertThat(overlappingSends(sends)).as("G3: sends of one key outstanding at once (seed %d)", seed).isEmpty();
        // G4
        assertThat(unexplained).as("G4: duplicates of records not in flight at a fault (faults %s, seed %d)",
                faults, seed).isEmpty();
        for (Fault f : faults) {
            assertThat(dupsByFault.get(f.what())).as("G4: duplicates after '%s'", f.what())
                    .isLessThanOrEqualTo(inFlightByFault.get(f.what()));
        }
        assertThat(watcher.duplicates()).as("repeats seen live").isEqualTo(duplicates);
        // Effectively once: each inbox consumer applied every committed message exactly once, duplicates and all.
        String inboxSummary = inboxes.check(truth, committed, duplicates, WAIT);
        inboxes.close();
        if (!inboxSummary.isEmpty()) {
            System.out.println("E2E " + name + " " + inboxSummary);
            log.info("{}: {}", name, inboxSummary);
        }
        return r;
    }

    /** Per key, a send that started before the previous send of the key completed (or that never completed). */
    private static List<String> overlappingSends(List<SendLog.Send> sends) {
        List<String> out = new ArrayList<>();
        Map<String, List<SendLog.Send>> byKey = sends.stream().collect(Collectors.groupingBy(s -> s.key));
        for (List<SendLog.Send> ofKey : byKey.values()) {
            List<SendLog.Send> sorted = new ArrayList<>(ofKey);
            sorted.sort(Comparator.comparingLong(s -> s.sentNanos));
            for (int i = 1; i < sorted.size(); i++) {
                SendLog.Send prev = sorted.get(i - 1);
                SendLog.Send next = sorted.get(i);
                if (prev.doneNanos() == 0 || prev.doneNanos() - next.sentNanos > 0) {
                    out.add(prev + " still outstanding when " + next + " started");
                }
            }
        }
        return out;
    }

    /**
     * Records in flight during fault {@code f}: sent before it had taken effect ({@code endNanos}), and neither
     * failed nor purged before it began ({@code startNanos}).
     */
    private int inFlightDuring(Fault f, List<SendLog.Send> sends, Map<String, Long> purged) {
        Set<String> ids = new HashSet<>();
        for (SendLog.Send x : sends) {
            if (x.sentNanos - f.endNanos() >= 0) {
                continue;
            }
            long done = x.doneNanos();
            boolean failedBefore = done != 0 && !x.acknowledged() && done - f.startNanos() < 0;
            Long purgedAt = purged.get(sendLog.recordKey(x.node, x.id));
            boolean purgedBefore = purgedAt != null && purgedAt - f.startNanos() < 0;
            if (!failedBefore && !purgedBefore) {
                ids.add(sendLog.recordKey(x.node, x.id));
            }
        }
        return ids.size();
    }

    private void print(Result r, long drainMillis) {
        StringBuilder faultsText = new StringBuilder();
        for (Map.Entry<String, Integer> e : r.duplicatesByFault().entrySet()) {
            if (faultsText.length() > 0) {
                faultsText.append(", ");
            }
            Integer inFlight = r.inFlightByFault().get(e.getKey());
            faultsText.append(e.getKey()).append(": ").append(e.getValue())
                    .append(inFlight == null ? "" : " of " + inFlight + " in flight");
        }
        String summary = String.format("E2E %s on %s: %d messages committed by %d writers in %d s (%d rolled back; "
                        + "scenario set up %d s before), %d records consumed, %d lost, %d per-key order violations,"
                        + " %d duplicates [%s], %d parked, take-over"
                        + " [%s], longest delivery gap %d ms, drained %d ms after the writers stopped, %d failures"
                        + " reported%s",
                r.name(), broker.name(), r.committed(), setup.writers(), writers.runMillis() / 1000, writers.rolledBack(),
                setUpMillis / 1000, r.consumed(), r.lost(), r.orderViolations(),
                r.duplicates(), faultsText, r.parked(),
                r.takeovers().stream().map(Takeover::toString).collect(Collectors.joining("; ")),
                r.longestGapMillis(), drainMillis, r.failuresReported(),
                notes.isEmpty() ? "" : "; " + String.join("; ", notes));
        System.out.println(summary);
        log.info(summary);
        log.info("{}: leadership timeline\n{}", name, timeline);
    }

    // ------------------------------------------------------------------------------------------ plumbing

    private Map<String, Map<Integer, String>> committedMessages() throws SQLException {
        Map<String, Map<Integer, String>> out = new HashMap<>();
        try (Connection c = appPool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT key, seq, token FROM e2e_events ORDER BY key, seq")) {
            while (rs.next()) {
                out.computeIfAbsent(rs.getString(1), k -> new TreeMap<>()).put(rs.getInt(2), rs.getString(3));
            }
        }
        out.forEach((k, seqs) -> assertThat(seqs.keySet()).as("committed sequence of %s", k)
                .containsExactlyElementsOf(IntStream.range(0, seqs.size()).boxed().toList()));
        return out;
    }

    private void execute(String sql) {
        try (Connection c = appPool.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql, e);
        }
    }

    static void await(BooleanSupplier condition, Duration timeout, Supplier<String> what) {
        Await.untilOrFail(() -> {
            try {
                return condition.getAsBoolean();
            } catch (RuntimeException e) {
                return false; // e.g. a store call while the database is being cut off: ask again
            }
        }, timeout, what);
    }

    static long millisSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }

    /** Stops whatever still runs; after {@link #finish()} only releases the pools. */
    @Override
    public void close() {
        List<Throwable> errors = new ArrayList<>();
        if (!finished) {
            runQuietly(errors, () -> {
                try {
                    writers.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            for (Node n : nodes) {
                runQuietly(errors, n::close);
            }
            runQuietly(errors, inboxes::close);
            lates.forEach(l -> runQuietly(errors, l::close));
            runQuietly(errors, () -> {
                try {
                    watcher.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            log.info("{}: leadership timeline (seed {})\n{}", name, seed, timeline);
        }
        if (harvest == Harvest.WAL && !slotDropped) {
            // Also when finish() failed half-way: stop every stream, then drop the slot.
            lates.forEach(l -> runQuietly(errors, l::close));
            for (Node n : nodes) {
                runQuietly(errors, n::close);
            }
            runQuietly(errors, this::dropSlot);
        }
        runQuietly(errors, appPool::close);
        if (!errors.isEmpty() && finished) {
            log.warn("{}: cleaning up failed", name, errors.get(0));
        }
    }

    private static void runQuietly(Collection<Throwable> errors, Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | AssertionError e) {
            errors.add(e);
            log.warn("cleanup step failed", e);
        }
    }

    @Override
    public String toString() {
        return "scenario " + name + " (seed " + seed + ", topic " + topic + ")";
    }
}
