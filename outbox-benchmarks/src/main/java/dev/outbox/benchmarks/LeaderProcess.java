package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.Store;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The leader of the take-over benchmark's {@code crash} mode, run as a child JVM so that it can be killed with
 * SIGKILL. Configured by {@code bench.*} system properties (see {@link TakeoverScenario}) and, for the database
 * password, the environment variable {@link #PASSWORD_VARIABLE} (a command line shows in {@code ps}); elects its
 * leader as {@value #ELECTION_PROPERTY} says (over Kafka, or over the database's lease table); prints
 * {@code LEADER <id>} on standard output when it leads, then harvests until it is killed. With
 * {@code bench.shards} above 1 it is one of the dispatchers of {@link ShardedTakeoverScenario} instead, and reports
 * as that class says.
 */
public final class LeaderProcess {
    /** The environment variable the parent passes the database password in. */
    public static final String PASSWORD_VARIABLE = "OUTBOX_BENCH_CHILD_DB_PASSWORD";
    /** The system property naming the election, {@code kafka} (the default) or {@code database}. */
    static final String ELECTION_PROPERTY = "bench.election";

    private LeaderProcess() {
    }

    public static void main(String[] args) throws Exception {
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(System.getProperty("bench.jdbc.url"));
        pool.setUsername(System.getProperty("bench.jdbc.user"));
        pool.setPassword(System.getenv().getOrDefault(PASSWORD_VARIABLE, ""));
        pool.setMaximumPoolSize(4);
        pool.setPoolName("bench-child");
        HikariDataSource ds = new HikariDataSource(pool);
        String table = System.getProperty("bench.table");
        int shards = Integer.getInteger("bench.shards", 1);
        Store store = System.getProperty("bench.database", "postgres").equals("postgres")
                ? PostgresStore.builder(ds).table(table).shards(shards).build()
                : MySqlStore.builder(ds).table(table).shards(shards).build();
        Map<String, Object> producer = new LinkedHashMap<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("bench.producer.")) {
                producer.put(name.substring("bench.producer.".length()), System.getProperty(name));
            }
        }
        DispatcherConfig config = TakeoverScenario.config(DispatcherConfig.builder()
                .markBatchSize(Integer.getInteger("bench.markBatchSize"))
                .maxInFlightRecords(Integer.getInteger("bench.maxInFlightRecords"))
                .purgeBatchSize(Integer.getInteger("bench.purgeBatchSize"))
                .build());
        KafkaMessageBroker broker = KafkaMessageBroker.builder().properties(producer).build();
        String election = System.getProperty(ELECTION_PROPERTY, TakeoverScenario.KAFKA);
        if (shards > 1) {
            ShardedTakeoverScenario.runChild(election, store, broker, System.getProperty("bench.bootstrap"),
                    System.getProperty("bench.leaderTopic"), config, shards, System.getProperty("bench.name"));
            return;
        }
        Dispatcher dispatcher = TakeoverScenario.dispatcher(election, store, broker, new TimingBroker(broker, 0, null),
                System.getProperty("bench.bootstrap"), System.getProperty("bench.leaderTopic"), config,
                "bench-child", new DispatcherListener() {
                    @Override
                    public void leaderAcquired(UUID leaderId) {
                        System.out.println(TakeoverScenario.LEADER_LINE + leaderId);
                        System.out.flush();
                    }
                });
        dispatcher.start();
        dispatcher.await();
    }
}
