package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.kafka.KafkaShardedLeaderTransport;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.spi.ShardedLeaderTransport;
import dev.outbox.store.postgres.PostgresStore;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.StringJoiner;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One dispatcher process of {@link ExactlyOnceEndToEndTest}, in a JVM of its own so that the test can SIGKILL it at
 * any moment of a Kafka transaction: a {@code PostgresStore} (sharded or not) on its own connection pool, a
 * {@code KafkaMessageBroker} with the transactional producer ({@code exactlyOnce()} on or off), and a
 * {@code KafkaLeaderTransport} (one leader) or {@code KafkaShardedLeaderTransport} (shards). Started with
 * {@code hold}, it builds everything, reports {@code READY} and starts its dispatcher only on {@code START}. It
 * reports on standard output, each line starting with {@value ShardedDispatcherChild#PREFIX}: {@code STARTED},
 * {@code LEADS <shards>} (comma-separated, {@code -} for none; shard 0 for the one leader of an unsharded outbox)
 * whenever what it leads changes, and {@code SKIPPED <n>} whenever the broker's count of records acknowledged
 * without a send (found in the progress record) changes. It closes its dispatcher on {@code STOP} or at the end of
 * its standard input.
 *
 * <p>Arguments: its name, {@code start} or {@code hold}, the Kafka bootstrap servers, the JDBC URL, the database
 * user (the password in the environment variable {@value #PASSWORD_VARIABLE}), the leader topic, the shard count
 * ({@code 0}: not sharded), the transactional id, and the progress topic ({@code -}: exactly-once off).
 */
public final class ExactlyOnceDispatcherChild {
    static final String PASSWORD_VARIABLE = "OUTBOX_TEST_DB_PASSWORD";

    private ExactlyOnceDispatcherChild() {
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        boolean hold = args[1].equals("hold");
        String bootstrap = args[2];
        int shards = Integer.parseInt(args[6]);
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(args[3]);
        hc.setUsername(args[4]);
        hc.setPassword(System.getenv(PASSWORD_VARIABLE));
        hc.setMaximumPoolSize(ShardedKafkaEndToEndTest.POOL_SIZE);
        hc.setMinimumIdle(1);
        hc.setConnectionTimeout(5_000);
        hc.setPoolName(name);
        HikariDataSource pool = new HikariDataSource(hc);
        KafkaMessageBroker broker = broker(name, bootstrap, args[7], args[8]);
        Dispatcher.Builder builder = Dispatcher.builder(store(pool, shards), broker)
                .config(ShardedKafkaEndToEndTest.CONFIG)
                .name(name);
        Dispatcher dispatcher = (shards > 0 ? builder.leaderTransport(shardedElection(name, bootstrap, args[5],
                shards, broker)) : builder.leaderTransport(election(name, bootstrap, args[5], broker))).build();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (hold) {
            ShardedDispatcherChild.report("READY");
            if (!"START".equals(in.readLine())) {
                return;
            }
        }
        dispatcher.start();
        ShardedDispatcherChild.report("STARTED");
        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name + "-reporter");
            t.setDaemon(true);
            return t;
        });
        String[] last = {"", ""};
        reporter.scheduleAtFixedRate(() -> {
            String led = shards == 0 ? (dispatcher.isLeader() ? "0" : "-") : led(dispatcher);
            if (!led.equals(last[0])) {
                last[0] = led;
                ShardedDispatcherChild.report("LEADS " + led);
            }
            String skipped = Long.toString(broker.recordsPublishedBefore());
            if (!skipped.equals(last[1])) {
                last[1] = skipped;
                ShardedDispatcherChild.report("SKIPPED " + skipped);
            }
        }, 0, 20, TimeUnit.MILLISECONDS);
        for (String line = in.readLine(); line != null && !line.equals("STOP"); line = in.readLine()) {
            // no other commands
        }
        reporter.shutdownNow();
        dispatcher.close();
        pool.close();
        ShardedDispatcherChild.report("STOPPED");
    }

    /** The transactional producer, with exactly-once on when {@code progressTopic} is not {@code -}. */
    static KafkaMessageBroker broker(String name, String bootstrap, String transactionalId, String progressTopic) {
        KafkaMessageBroker.Builder b = KafkaMessageBroker.builder().bootstrapServers(bootstrap)
                .deliveryTimeout(Scenario.DELIVERY_TIMEOUT)
                .property("client.id", name)
                .transactionalId(transactionalId);
        return (progressTopic.equals("-") ? b : b.exactlyOnce(progressTopic)).build();
    }

    /** The outbox's store: the table harvest, sharded in {@code shards} when above 0. */
    static PostgresStore store(javax.sql.DataSource pool, int shards) {
        PostgresStore.Builder b = PostgresStore.builder(pool).statementTimeout(Duration.ofSeconds(5));
        return (shards > 0 ? b.shards(shards) : b).build();
    }

    private static ShardedLeaderTransport shardedElection(String name, String bootstrap, String topic, int shards,
                                                          KafkaMessageBroker broker) {
        int session = (int) Scenario.SESSION_TIMEOUT.toMillis();
        return KafkaShardedLeaderTransport.builder().bootstrapServers(bootstrap).topic(topic).shards(shards)
                .dispatcherConfig(ShardedKafkaEndToEndTest.CONFIG).deliveryTimeoutOf(broker)
                .consumerProperty("session.timeout.ms", session)
                .consumerProperty("max.poll.interval.ms", session)
                .consumerProperty("client.id", name + "-leader")
                .build();
    }

    private static LeaderTransport election(String name, String bootstrap, String topic, KafkaMessageBroker broker) {
        int session = (int) Scenario.SESSION_TIMEOUT.toMillis();
        return KafkaLeaderTransport.builder().bootstrapServers(bootstrap).topic(topic)
                .dispatcherConfig(ShardedKafkaEndToEndTest.CONFIG).deliveryTimeoutOf(broker)
                .consumerProperty("session.timeout.ms", session)
                .consumerProperty("max.poll.interval.ms", session)
                .consumerProperty("client.id", name + "-leader")
                .build();
    }

    /** The shards {@code d} leads, comma-separated, or "-". */
    private static String led(Dispatcher d) {
        StringJoiner j = new StringJoiner(",");
        List<DispatcherHealth> health = d.shardHealth();
        for (int s = 0; s < health.size(); s++) {
            if (health.get(s).status() == DispatcherHealth.Status.LEADER) {
                j.add(Integer.toString(s));
            }
        }
        return j.length() == 0 ? "-" : j.toString();
    }
}
