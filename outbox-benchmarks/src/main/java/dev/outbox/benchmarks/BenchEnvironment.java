package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.Store;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.RabbitMqServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The servers and settings every scenario of one run shares: the database {@code outbox_bench} (Postgres,
 * MySQL or MariaDB) with a connection pool, the Kafka cluster, the Dispatcher configuration and the producer properties. Not
 * thread-safe to set up; its getters are safe from any thread once built.
 */
final class BenchEnvironment implements AutoCloseable {
    static final String DATABASE = "outbox_bench";
    static final String TABLE = "outbox";

    private final BenchmarkOptions options;
    private final BenchDatabase database;
    private final KafkaServer kafka;
    private final AtomicInteger topics = new AtomicInteger();

    BenchEnvironment(BenchmarkOptions options) {
        this.options = options;
        String kind = options.database;
        if (options.dbUrl != null) {
            System.setProperty("outbox.test." + kind + ".url", options.dbUrl);
            System.setProperty("outbox.test." + kind + ".user", options.dbUser);
            System.setProperty("outbox.test." + kind + ".password", options.dbPassword);
        }
        if (options.kafkaBootstrap != null) {
            System.setProperty(TestServers.KAFKA_BOOTSTRAP_PROPERTY, options.kafkaBootstrap);
        }
        if (System.getProperty(TestServers.MODE_PROPERTY) == null) {
            System.setProperty(TestServers.MODE_PROPERTY, options.servers);
        }
        Progress.say("starting %s and Kafka (%s)...", kind, options.servers);
        // Kafka's test kit prints its formatting steps on standard output, which carries only the report.
        java.io.PrintStream stdout = System.out;
        System.setOut(System.err);
        JdbcServer server;
        try {
            server = TestServers.jdbc(JdbcServer.Kind.valueOf(kind.toUpperCase(java.util.Locale.ROOT)));
            this.kafka = TestServers.kafka();
        } finally {
            System.setOut(stdout);
        }
        // The writers hold one each; the leader reads, purges, samples and (Postgres, commit notifications) listens.
        int poolSize = Math.max(9, options.writers + 5);
        this.database = kind.equals("postgres")
                ? new PostgresDatabase(server, options.synchronousCommit, poolSize)
                : new MySqlDatabase(kind, server, options.synchronousCommit, poolSize, options.jdbcOptions,
                        options.serverSettings);
    }

    BenchDatabase database() {
        return database;
    }

    KafkaServer kafka() {
        return kafka;
    }

    DataSource pool() {
        return database.pool();
    }

    Store store() {
        return database.store();
    }

    static HikariDataSource pool(String url, String user, String password, int size) {
        HikariConfig config = Jdbc.poolConfig(url, user, password, size, "bench");
        config.setConnectionTimeout(30_000);
        return new HikariDataSource(config);
    }

    /** The Dispatcher configuration of the throughput and latency scenarios. */
    DispatcherConfig dispatcherConfig() {
        return DispatcherConfig.builder()
                .markBatchSize(options.markBatchSize)
                .maxInFlightRecords(options.maxInFlightRecords)
                .purgeBatchSize(options.purgeBatchSize)
                .build();
    }

    /**
     * The producer properties of the Dispatcher's broker and of the bare producer of the broker ceiling:
     * everything {@link KafkaMessageBroker} enforces or defaults, written out so that both get exactly the
     * same, plus batching for throughput and the user's --producer properties.
     */
    Map<String, Object> producerProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) KafkaMessageBroker.DEFAULT_DELIVERY_TIMEOUT.toMillis());
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_997);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000L);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 65_536);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        p.putAll(options.producer);
        return p;
    }

    /** A Kafka broker for the Dispatcher with {@link #producerProperties()}. */
    KafkaMessageBroker newBroker(String clientId) {
        Map<String, Object> p = producerProperties();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        KafkaMessageBroker.Builder b = KafkaMessageBroker.builder().properties(p);
        String txn = transactionalId;
        if (txn != null) {
            b.transactionalId(txn + "-" + clientId + "-" + ProcessHandle.current().pid());
            if (exactlyOnce) {
                b.exactlyOnce("bench-progress");
            }
        }
        return b.build();
    }

    /** The brokers {@link #newBroker} makes from now on publish in Kafka transactions under ids from this prefix. */
    private volatile String transactionalId;

    /** Whether the transactional brokers made from now on publish exactly once ({@code exactlyOnce}). */
    private volatile boolean exactlyOnce;

    /** The RabbitMQ node of the RabbitMQ lines, started by the first call ({@link TestServers#rabbitMq()}). */
    RabbitMqServer rabbitMq() {
        return TestServers.rabbitMq();
    }

    /** Sets (or, with null, clears) the transactional id prefix of the brokers made from now on. */
    void transactionalBrokers(String prefix) {
        transactionalBrokers(prefix, false);
    }

    /** {@link #transactionalBrokers(String)}, publishing exactly once if {@code exactlyOnce}. */
    void transactionalBrokers(String prefix, boolean exactlyOnce) {
        this.transactionalId = prefix;
        this.exactlyOnce = prefix != null && exactlyOnce;
    }

    /**
     * Creates a fresh topic for one scenario run with --partitions partitions, and writes one probe record to
     * each partition: right after creation a partition may still answer NOT_LEADER_OR_FOLLOWER, and the
     * idempotent producer's retry of a first batch can then fail with an out-of-order sequence number.
     */
    String newTopic(String prefix) {
        String name = "bench-" + prefix + "-" + ProcessHandle.current().pid() + "-" + topics.incrementAndGet();
        kafka.createTopic(name, options.partitions);
        Map<String, Object> p = producerProperties();
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-topic-probe");
        try (KafkaProducer<String, byte[]> probe = new KafkaProducer<>(p, new StringSerializer(),
                new ByteArraySerializer())) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int partition = 0; partition < options.partitions; partition++) {
                acks.add(probe.send(new ProducerRecord<>(name, partition, "probe", new byte[0])));
            }
            for (Future<RecordMetadata> ack : acks) {
                ack.get(30, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while probing topic " + name, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("topic " + name + " did not accept its probe records: " + e, e);
        }
        return name;
    }

    static void execute(DataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    static long queryLong(DataSource ds, String sql) {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    /** Waits {@code d} (a pause between measurements, not a wait for a condition). */
    static void pause(Duration d) {
        long end = System.nanoTime() + d.toNanos();
        while (System.nanoTime() - end < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(end - System.nanoTime());
        }
    }

    @Override
    public void close() {
        database.close();
    }
}
