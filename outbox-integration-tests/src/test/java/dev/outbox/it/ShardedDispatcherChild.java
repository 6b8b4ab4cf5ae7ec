package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One dispatcher process of {@link ShardedKafkaEndToEndTest}, in a JVM of its own so that the test can SIGKILL it:
 * for each outbox it is given, a sharded dispatcher over a sharded SQL store (its own connection pool), a
 * {@code KafkaMessageBroker} and a {@code KafkaShardedLeaderTransport}, built by
 * {@link ShardedKafkaEndToEndTest#dispatcher}. Started with {@code hold}, it builds everything, reports
 * {@code READY} and starts its dispatchers only on {@code START} (so that a test can have a process join at once,
 * its JVM already warm). It reports on standard output, each line starting with {@value #PREFIX}: {@code STARTED}
 * once its dispatchers run, and {@code <outbox> LEADS <shards>} (comma-separated,
 * {@code -} for none) whenever the set of shards it leads in that outbox changes. It stops its dispatchers (an
 * orderly close) on {@code STOP} or at the end of its standard input.
 *
 * <p>Arguments: its name, {@code start} or {@code hold}, the Kafka bootstrap servers, then one
 * {@code <outbox>,<kind>,<leader topic>,<user>,<jdbc url>} per outbox ({@code kind} {@code postgres} or {@code mysql}). The database password of each outbox comes from the
 * environment variable {@link #passwordVariable(String)}.
 */
public final class ShardedDispatcherChild {
    static final String PREFIX = "@@ ";

    private ShardedDispatcherChild() {
    }

    static String passwordVariable(String outbox) {
        return "OUTBOX_TEST_DB_PASSWORD_" + outbox.toUpperCase(Locale.ROOT);
    }

    static synchronized void report(String line) {
        System.out.println(PREFIX + line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        boolean hold = args[1].equals("hold");
        String bootstrap = args[2];
        Map<String, Dispatcher> dispatchers = new LinkedHashMap<>();
        List<HikariDataSource> pools = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String[] spec = args[i].split(",", 5);
            String outbox = spec[0];
            HikariConfig hc = new HikariConfig();
            hc.setJdbcUrl(spec[4]);
            hc.setUsername(spec[3]);
            hc.setPassword(System.getenv(passwordVariable(outbox)));
            hc.setMaximumPoolSize(ShardedKafkaEndToEndTest.POOL_SIZE);
            hc.setMinimumIdle(1);
            hc.setConnectionTimeout(5_000);
            hc.setPoolName(name + "-" + outbox);
            HikariDataSource pool = new HikariDataSource(hc);
            pools.add(pool);
            dispatchers.put(outbox, ShardedKafkaEndToEndTest.dispatcher(name, outbox, spec[1], pool, bootstrap,
                    spec[2]));
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (hold) {
            warmUp(bootstrap);
            report("READY");
            String line = in.readLine();
            if (!"START".equals(line)) {
                return;
            }
        }
        dispatchers.values().forEach(Dispatcher::start);
        report("STARTED");
        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name + "-reporter");
            t.setDaemon(true);
            return t;
        });
        Map<String, String> last = new LinkedHashMap<>();
        reporter.scheduleAtFixedRate(() -> dispatchers.forEach((outbox, d) -> {
            String led = led(d);
            if (!led.equals(last.put(outbox, led))) {
                report(outbox + " LEADS " + led);
            }
        }), 0, 20, TimeUnit.MILLISECONDS);
        for (String line = in.readLine(); line != null && !line.equals("STOP"); line = in.readLine()) {
            // no other commands
        }
        reporter.shutdownNow();
        dispatchers.values().forEach(Dispatcher::close);
        pools.forEach(HikariDataSource::close);
        report("STOPPED");
    }

    /**
     * Loads and runs once what joining the leader group will use (an admin client, a consumer), so that a process
     * told to start joins at once instead of spending seconds loading classes.
     */
    private static void warmUp(String bootstrap) throws Exception {
        Map<String, Object> props = Map.of("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().clusterId().get(30, TimeUnit.SECONDS);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.listTopics(Duration.ofSeconds(30));
        }
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
