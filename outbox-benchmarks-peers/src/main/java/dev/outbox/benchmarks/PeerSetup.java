package dev.outbox.benchmarks;

import dev.outbox.benchmarks.peers.debezium.DebeziumPeer;
import dev.outbox.benchmarks.peers.modulith.ModulithPeer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Each peer's settings and child JVM in the peers' run ({@link PeerBenchmark}): Spring Modulith's and Debezium's
 * settings as printed with the results (with where each came from), the system properties their {@link PeerChild}
 * JVMs start with, the starts themselves (Modulith's awaited until READY, Debezium's until READY and its slot
 * active), and Debezium's slot and publication dropped between its runs. Every child started is handed to
 * {@code running}: the run's CPU time counts the running child's.
 */
final class PeerSetup {
    private final BenchEnvironment env;
    private final BenchmarkOptions options;
    private final Path out;
    private final Map<String, List<String[]>> settings;
    private final Consumer<PeerChild> running;

    /**
     * @param settings the run's printed settings, into which Debezium's go when its properties are made
     * @param running  told of every child started (the run's CPU time counts the running child's)
     */
    PeerSetup(BenchEnvironment env, BenchmarkOptions options, Map<String, List<String[]>> settings,
              Consumer<PeerChild> running) {
        this.env = env;
        this.options = options;
        this.out = options.out;
        this.settings = settings;
        this.running = running;
    }

    /** Spring Modulith's settings, as printed with the results. */
    List<String[]> modulithSettings() {
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"versions", "Spring Modulith 2.0.3, Spring Boot 4.0.7, spring-kafka 4.0.x",
                "the newest spring-modulith-events-kafka this build reaches"});
        s.addAll(ModulithPeer.SETTINGS);
        s.add(new String[] {"writers", options.writers + " threads in the application, TransactionTemplate:"
                + " INSERT peer_commits + publishEvent per record", "Modulith reference, 'Working with Application"
                + " Events'"});
        s.add(new String[] {"drain's backlog", "publications committed while the application's task executor was"
                + " held (externalizations queued, none sent), then SIGKILL; restarted with the settings above",
                "ModulithDrain: the registry's rows are Modulith's own"});
        return s;
    }

    /** Starts a Spring Modulith child JVM and waits for its READY. */
    PeerChild startModulith() throws Exception {
        PeerChild child = new PeerChild("modulith", ModulithPeer.class.getName(), childProperties(),
                env.database().server().password(), out.resolve("peer-modulith.log"));
        child.await("READY", Duration.ofMinutes(3));
        running.accept(child);
        return child;
    }

    /**
     * A new Debezium connector's properties: its offsets in {@code offsetsFile} under --out (deleted first), its
     * slot and publication dropped and the outbox table emptied, so that it starts afresh; Debezium's settings go
     * into the printed settings.
     */
    Map<String, String> freshDebezium(String offsetsFile) throws IOException {
        Path offsets = out.resolve(offsetsFile).toAbsolutePath();
        Files.createDirectories(out);
        Files.deleteIfExists(offsets);
        dropDebeziumSlot();
        return debeziumProperties(offsets);
    }

    /** Starts a Debezium child JVM with {@code props} and waits for its READY and its slot streaming. */
    PeerChild startDebezium(Map<String, String> props) throws Exception {
        PeerChild child = new PeerChild("debezium", DebeziumPeer.class.getName(), props,
                env.database().server().password(), out.resolve("peer-debezium.log"));
        child.await("READY", Duration.ofMinutes(3));
        // The slot exists and streams once it is active.
        long end = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (BenchEnvironment.queryLong(env.pool(), "SELECT count(*) FROM pg_replication_slots WHERE"
                + " slot_name = 'peer_debezium' AND active") == 0) {
            if (System.nanoTime() - end > 0) {
                throw new IllegalStateException("Debezium's slot never became active");
            }
            LockSupport.parkNanos(100_000_000L);
        }
        running.accept(child);
        return child;
    }

    /** Drops Debezium's slot (if no connector streams from it) and publication, and empties the outbox table. */
    void dropDebeziumSlot() {
        BenchEnvironment.execute(env.pool(), "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name = 'peer_debezium' AND NOT active");
        BenchEnvironment.execute(env.pool(), "DROP PUBLICATION IF EXISTS peer_debezium_pub");
        // A new connector snapshots the table first (snapshot.mode initial): start it on an empty one.
        BenchEnvironment.execute(env.pool(), "TRUNCATE peer_outbox");
    }

    private Map<String, String> debeziumProperties(Path offsets) {
        Matcher m = Pattern.compile("jdbc:postgresql://([^:/]+):(\\d+)/([^?]+).*").matcher(env.database().jdbcUrl());
        if (!m.matches()) {
            throw new IllegalStateException("cannot parse " + env.database().jdbcUrl());
        }
        Map<String, String> p = childProperties();
        p.put("bench.db.host", m.group(1));
        p.put("bench.db.port", m.group(2));
        p.put("bench.db.name", m.group(3));
        p.put("bench.offsets", offsets.toAbsolutePath().toString());
        p.put("bench.slot", "peer_debezium");
        String poll = System.getProperty("bench.debezium.pollIntervalMs");
        if (poll != null) {
            p.put("bench.debezium.pollIntervalMs", poll);
        }
        settings.put("debezium", DebeziumPeer.settings(m.group(1), Integer.parseInt(m.group(2)),
                env.database().server().username(), m.group(3), offsets.toString(), "peer_debezium"));
        return p;
    }

    private Map<String, String> childProperties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("bench.jdbc.url", env.database().jdbcUrl());
        p.put("bench.jdbc.user", env.database().server().username());
        p.put("bench.bootstrap", env.kafka().bootstrapServers());
        return p;
    }
}
