package dev.outbox.benchmarks.peers.modulith;

import dev.outbox.benchmarks.peers.PeerLoad;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.modulith.events.EventExternalizationConfiguration;
import org.springframework.modulith.events.RoutingTarget;
import org.springframework.transaction.support.TransactionTemplate;

import java.io.BufferedReader;
import java.io.DataOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Spring Modulith as a user would run it, in a child JVM: a Spring Boot application whose writers commit a business
 * row ({@code peer_commits}) and publish an {@link BenchEvent} in the same transaction; the JDBC event publication
 * registry stores the publication, and spring-modulith-events-kafka externalizes the event to Kafka after the
 * commit and marks the publication completed. {@link #SETTINGS} are the application's properties, printed by the
 * parent with where each came from.
 *
 * <p>Protocol on standard input / output: prints {@code READY}; then each line
 * {@code RUN topic rate perTx writers start end keysPerWriter valueBytes seed base capacity file} runs the writers
 * (start and end are {@code System.nanoTime()} values, the same clock as the parent's on Linux) and writes the
 * commit times as {@code capacity} longs to {@code file}, then prints {@code DONE <records>};
 * {@code FILL topic rows writers perTx keysPerWriter valueBytes base} leaves {@code rows} publications incomplete in
 * the registry ({@link ModulithFill}), then prints {@code FILLED} (the parent kills it then). {@code QUIT} exits.
 */
@SpringBootApplication
public class ModulithPeer {
    /** The event: the record the benchmark's writers publish. The registry stores it as JSON. */
    @org.springframework.modulith.events.Externalized
    public record BenchEvent(String topic, String key, long seq, byte[] value) {
    }

    /**
     * The application's settings beyond Spring Boot's and Modulith's defaults, with their reason; the parent prints
     * them. The JDBC URL, user and password come from the parent's system properties.
     */
    public static final List<String[]> SETTINGS = List.of(
            new String[] {"spring.modulith.events.republish-outstanding-events-on-restart", "true",
                    "Modulith reference, 'Event Publication Registry': incomplete publications are resubmitted on"
                            + " restart only with this on (default false); production needs it for at-least-once"},
            new String[] {"spring.modulith.events.jdbc.schema-initialization.enabled", "true",
                    "creates event_publication (production would use a migration tool; no effect on the run)"},
            new String[] {"spring.modulith.events.kafka.enable-json", "false",
                    "the value is the event's 100 bytes (mapping below), not JSON: the same message shape as ours"},
            new String[] {"spring.kafka.producer.key-serializer", "org.apache.kafka.common.serialization.StringSerializer",
                    "Boot default"},
            new String[] {"spring.kafka.producer.value-serializer",
                    "org.apache.kafka.common.serialization.ByteArraySerializer", "the 100-byte value as is"},
            new String[] {"spring.kafka.producer.acks", "all",
                    "Kafka's default (acks=all, enable.idempotence=true since 3.0), written out"},
            new String[] {"spring.datasource.hikari.maximum-pool-size", "10", "Boot (Hikari) default, written out"},
            new String[] {"spring.modulith.events.completion-mode", "update", "default"},
            new String[] {"spring.task.execution.pool.core-size", "8", "Boot default, written out: the externalizer"
                    + " is an @ApplicationModuleListener (@Async), so events are sent from this pool's threads"},
            new String[] {"EventExternalizationConfiguration", "route(topic, key) + mapping(value) + headers",
                    "Modulith reference, 'Externalizing Events': the programmatic routing, key and payload mapping"});

    @Bean
    EventExternalizationConfiguration externalization() {
        return EventExternalizationConfiguration.externalizing()
                .select(EventExternalizationConfiguration.annotatedAsExternalized())
                .route(BenchEvent.class, e -> RoutingTarget.forTarget(e.topic()).andKey(e.key()))
                .mapping(BenchEvent.class, BenchEvent::value)
                .headers(BenchEvent.class, e -> Map.of("eventType", "bench"))
                .build();
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new LinkedHashMap<>();
        props.put("spring.datasource.url", System.getProperty("bench.jdbc.url"));
        props.put("spring.datasource.username", System.getProperty("bench.jdbc.user"));
        props.put("spring.datasource.password", System.getenv().getOrDefault("OUTBOX_BENCH_CHILD_DB_PASSWORD", ""));
        props.put("spring.kafka.bootstrap-servers", System.getProperty("bench.bootstrap"));
        props.put("spring.main.banner-mode", "off");
        for (String[] s : SETTINGS) {
            if (s[0].startsWith("spring.")) {
                props.put(s[0], s[1]);
            }
        }
        SpringApplication app = new SpringApplication(ModulithPeer.class);
        app.setDefaultProperties(props);
        ConfigurableApplicationContext context = app.run();
        JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
        TransactionTemplate tx = context.getBean(TransactionTemplate.class);
        ApplicationEventPublisher events = context;
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("QUIT")) {
                break;
            }
            if (f[0].equals("FILL")) {
                Throwable failure = ModulithFill.fill(context, f[1], Long.parseLong(f[2]), Integer.parseInt(f[3]),
                        Integer.parseInt(f[4]), Integer.parseInt(f[5]), Integer.parseInt(f[6]), Long.parseLong(f[7]));
                if (failure != null) {
                    failure.printStackTrace();
                    System.out.println("FAILED " + failure);
                } else {
                    System.out.println("FILLED");
                }
                System.out.flush();
                continue;
            }
            if (!f[0].equals("RUN")) {
                continue;
            }
            String topic = f[1];
            int rate = Integer.parseInt(f[2]);
            int perTx = Integer.parseInt(f[3]);
            int writers = Integer.parseInt(f[4]);
            long start = Long.parseLong(f[5]);
            long end = Long.parseLong(f[6]);
            int keysPerWriter = Integer.parseInt(f[7]);
            int valueBytes = Integer.parseInt(f[8]);
            long seed = Long.parseLong(f[9]);
            long base = Long.parseLong(f[10]);
            int capacity = Integer.parseInt(f[11]);
            Path file = Path.of(f[12]);
            AtomicLong sequences = new AtomicLong(base);
            AtomicLongArray committed = new AtomicLongArray(capacity);
            Throwable failure = PeerLoad.run(w -> (keys, seqs, values) -> tx.executeWithoutResult(status -> {
                Object[][] rows = new Object[seqs.length][];
                for (int i = 0; i < seqs.length; i++) {
                    rows[i] = new Object[] {"modulith", seqs[i]};
                }
                jdbc.batchUpdate("INSERT INTO peer_commits(system, seq) VALUES (?, ?)", List.of(rows));
                for (int i = 0; i < seqs.length; i++) {
                    events.publishEvent(new BenchEvent(topic, keys[i], seqs[i], values[i]));
                }
            }), writers, rate, perTx, start, end, keysPerWriter, valueBytes, seed, sequences, base, committed);
            try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(
                    Files.newOutputStream(file)))) {
                for (int i = 0; i < capacity; i++) {
                    out.writeLong(committed.get(i));
                }
            }
            if (failure != null) {
                failure.printStackTrace();
                System.out.println("FAILED " + failure);
            } else {
                System.out.println("DONE " + (sequences.get() - base));
            }
            System.out.flush();
        }
        context.close();
        System.exit(0);
    }
}
