package dev.outbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.store.sql.SqlLeaderTransport;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Our engine as a peer of the crash run ({@link EngineCrash}), in a child JVM so that it can be SIGKILLed: one
 * {@link Dispatcher} on the benchmark's outbox table, harvesting it with the cursor or from the WAL
 * ({@code bench.harvest}), publishing with {@link KafkaMessageBroker}, electing its leader over the database's lease
 * table ({@link SqlLeaderTransport}, the transport's defaults) so that two of them can run, one as standby.
 * Settings as system properties: {@code bench.jdbc.url}, {@code bench.jdbc.user}, {@code bench.harvest},
 * {@code bench.producer.*} (the producer's properties), {@code bench.markBatchSize},
 * {@code bench.maxInFlightRecords}, {@code bench.purgeBatchSize}, {@code bench.heartbeatTimeoutMs} (optional),
 * {@code bench.name}; the password in {@link LeaderProcess#PASSWORD_VARIABLE}.
 *
 * <p>Protocol on standard input / output: prints {@code READY} once built; {@code START} starts the Dispatcher
 * (prints {@code STARTED}); {@code LEADER <id>} is printed when it leads; {@code QUIT} closes it and exits.
 */
public final class EngineChild {
    private EngineChild() {
    }

    public static void main(String[] args) throws Exception {
        String url = System.getProperty("bench.jdbc.url");
        String user = System.getProperty("bench.jdbc.user");
        String password = System.getenv().getOrDefault(LeaderProcess.PASSWORD_VARIABLE, "");
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(url);
        pool.setUsername(user);
        pool.setPassword(password);
        pool.setMaximumPoolSize(8);
        pool.setPoolName("bench-engine-child");
        HikariDataSource ds = new HikariDataSource(pool);
        String harvest = System.getProperty("bench.harvest", "cursor");
        PostgresStore.Builder sb = PostgresStore.builder(ds).table(BenchEnvironment.TABLE);
        if (harvest.equals("wal")) {
            sb.walHarvest(WalHarvest.builder(url).user(user).password(password).build());
        } else if (!harvest.equals("cursor")) {
            throw new IllegalArgumentException("bench.harvest must be cursor or wal, was " + harvest);
        }
        PostgresStore store = sb.build();
        Map<String, Object> producer = new LinkedHashMap<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("bench.producer.")) {
                producer.put(name.substring("bench.producer.".length()), System.getProperty(name));
            }
        }
        DispatcherConfig.Builder cb = DispatcherConfig.builder()
                .markBatchSize(Integer.getInteger("bench.markBatchSize"))
                .maxInFlightRecords(Integer.getInteger("bench.maxInFlightRecords"))
                .purgeBatchSize(Integer.getInteger("bench.purgeBatchSize"));
        Integer heartbeat = Integer.getInteger("bench.heartbeatTimeoutMs");
        if (heartbeat != null) {
            cb.heartbeatTimeout(Duration.ofMillis(heartbeat));
        }
        DispatcherConfig config = cb.build();
        KafkaMessageBroker broker = KafkaMessageBroker.builder().properties(producer).build();
        Duration deliveryTimeout = Duration.ofMillis(Long.parseLong(String.valueOf(producer.getOrDefault(
                "delivery.timeout.ms", KafkaMessageBroker.DEFAULT_DELIVERY_TIMEOUT.toMillis()))));
        Dispatcher dispatcher = Dispatcher.builder(store, broker)
                .config(config)
                .leaderTransport(SqlLeaderTransport.builder(store).dispatcherConfig(config)
                        .deliveryTimeout(deliveryTimeout).build())
                .listener(new DispatcherListener() {
                    @Override
                    public void leaderAcquired(UUID leaderId) {
                        say("LEADER " + leaderId);
                    }
                })
                .name(System.getProperty("bench.name", "bench-engine"))
                .build();
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String command = line.trim();
            if (command.equals("QUIT")) {
                break;
            }
            if (command.equals("START")) {
                dispatcher.start();
                say("STARTED");
            }
        }
        dispatcher.close();
        ds.close();
        System.exit(0);
    }

    private static void say(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }
}
