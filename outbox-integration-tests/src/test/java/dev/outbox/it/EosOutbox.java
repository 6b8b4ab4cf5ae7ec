package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

import java.sql.Connection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The outbox of one {@link ExactlyOnceEndToEndTest} run: a fresh Postgres database (sharded or not), its data topic
 * (4 partitions), leader topic and progress topic, a transactional id of its own, a writer (one transaction of
 * {@value #PER_TRANSACTION} records at a time over {@value #KEYS} keys, each key's values numbered 1, 2, …) and the
 * consumer of the data topic, reading {@code read_committed} ({@link TopicWatcher}): records of aborted
 * transactions are never seen, as a consumer of an exactly-once outbox must read.
 */
final class EosOutbox implements AutoCloseable {
    static final String DISPATCHER_USER = "outbox_eos_dispatcher";
    static final String DISPATCHER_PASSWORD = "dispatcher";
    private static final int KEYS = 200;
    private static final int PER_TRANSACTION = 5;
    /** Records committed but not yet consumed above which the writer waits. */
    private static final int MAX_UNCONSUMED = 200;

    private final JdbcServer pg;
    private final KafkaServer kafka;
    private final String url;
    private final int shards;
    private final String dataTopic;
    private final String transactionalId;
    private final String progressTopic;
    private final HikariDataSource pool;
    private final PostgresStore store;
    private final TopicWatcher watcher;
    private final Map<String, Integer> lastSeq = new ConcurrentHashMap<>();
    private final AtomicLong written = new AtomicLong();
    private final Random random;
    private final Thread writer;
    private volatile boolean writing = true;
    private volatile Throwable writerFailure;

    /**
     * @param database the database's name (created afresh: dropped first if a previous run left it)
     * @param run      a name unique to the run, for the topics and the transactional id
     * @param exactlyOnce whether the dispatchers publish exactly once (else: the transactional producer alone)
     */
    EosOutbox(JdbcServer pg, KafkaServer kafka, String database, String run, int shards, boolean exactlyOnce,
              long seed) {
        this.pg = pg;
        this.kafka = kafka;
        this.shards = shards;
        this.url = pg.createDatabase(database);
        pg.createUser(DISPATCHER_USER, DISPATCHER_PASSWORD);
        this.dataTopic = "e2e-eos-" + run;
        this.transactionalId = "e2e-eos-" + run;
        this.progressTopic = exactlyOnce ? "e2e-eos-" + run + "-progress" : "-";
        kafka.createTopic(dataTopic, Scenario.PARTITIONS);
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(url);
        hc.setUsername(pg.username());
        hc.setPassword(pg.password());
        hc.setMaximumPoolSize(2);
        hc.setPoolName("eos-writer-" + run);
        this.pool = new HikariDataSource(hc);
        this.store = ExactlyOnceDispatcherChild.store(pool, shards);
        store.createSchema();
        this.watcher = new TopicWatcher(kafka.bootstrapServers(), dataTopic, true);
        this.random = new Random(seed);
        this.writer = new Thread(this::write, "eos-writer-" + run);
    }

    void start() {
        watcher.start();
        writer.start();
    }

    String bootstrap() {
        return kafka.bootstrapServers();
    }

    String dispatcherUrl() {
        return url;
    }

    String leaderTopic() {
        return dataTopic + "-leader";
    }

    int shards() {
        return shards;
    }

    String transactionalId() {
        return transactionalId;
    }

    /** The progress topic, or {@code -} with exactly-once off. */
    String progressTopic() {
        return progressTopic;
    }

    TopicWatcher watcher() {
        return watcher;
    }

    long written() {
        return written.get();
    }

    Throwable writerFailure() {
        return writerFailure;
    }

    /** Rows left in the outbox table. */
    long backlog() {
        return store.backlog();
    }

    long parked() {
        return store.parkedCount();
    }

    /** Whether the consumer has seen every key's last committed record and the table is empty. */
    boolean drained() {
        return watcher.reached(lastSeq) && store.backlog() == 0;
    }

    /** Kills the dispatchers' database sessions (not the writer's); returns how many. */
    int killDispatcherConnections() {
        return pg.killConnections(DISPATCHER_USER);
    }

    private void write() {
        long tx = 0;
        try {
            while (writing) {
                if (written.get() - watcher.distinct() > MAX_UNCONSUMED) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                    continue;
                }
                String token = "t" + tx++;
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

    /** Stops the writer and the consumer, releases the pool and deletes the run's topics (best effort). */
    @Override
    public void close() throws InterruptedException {
        close(true);
    }

    /**
     * Stops the writer and the consumer and releases the pool; deletes the run's topics (best effort) if
     * {@code deleteTopics}, else says which it keeps.
     */
    void close(boolean deleteTopics) throws InterruptedException {
        stopWriting();
        watcher.close();
        pool.close();
        if (!deleteTopics) {
            System.out.println("kept the topics " + dataTopic + " and " + progressTopic + " (transactional id "
                    + transactionalId + ") for inspection");
            return;
        }
        List<String> topics = progressTopic.equals("-") ? List.of(dataTopic, leaderTopic())
                : List.of(dataTopic, leaderTopic(), progressTopic);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap()))) {
            admin.deleteTopics(topics).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            System.out.println("could not delete " + topics + ": " + e);
        }
    }
}
