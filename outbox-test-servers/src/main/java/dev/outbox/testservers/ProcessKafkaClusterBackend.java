package dev.outbox.testservers;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A three-broker KRaft cluster of child JVMs: three brokers (node ids 0, 1, 2) and one separate controller (node id
 * {@value #CONTROLLER_ID}), each a {@code kafka.Kafka} server in a process of its own ({@link KafkaNodeMain}), on
 * free ports of 127.0.0.1, with its data, {@code server.properties} and log under
 * {@code target/outbox-test-servers/kafka-cluster-<pid>/<node>/}. Every topic, the internal ones too, has
 * replication factor 3 and {@code min.insync.replicas=2}.
 *
 * <p>Why a separate controller rather than three combined broker-controllers: the fault under test is a lost
 * <em>broker</em>. Killing a combined node would also kill a voter of the metadata quorum (and, a third of the
 * time, its active controller), two faults at once; and with two combined nodes down the quorum is lost, so the
 * controller could not shrink the in-sync replica sets and a producer would meet timeouts instead of Kafka's
 * answer to too few replicas ({@code NOT_ENOUGH_REPLICAS}). A fourth JVM costs about as much start-up time as it
 * saves in doubt.
 *
 * <p>{@link #broker(int, boolean) broker(i, false)} kills broker {@code i} with SIGKILL: no controlled shutdown,
 * no flush, its sockets reset by the kernel. Its data survive in the page cache as after a process crash (not a
 * machine crash). The controller notices when the broker's session ({@code broker.session.timeout.ms}, 2 s here,
 * 9 s by default) expires: it fences the broker, moves the leadership of its partitions and removes it from their
 * in-sync replicas. Until then a producer with {@code acks=all} waits on every partition whose in-sync replicas
 * still list the dead broker. Started again, the broker recovers its log and catches up; {@code broker(i, true)}
 * returns once it is back in the in-sync replicas of every partition it holds.
 *
 * <p>Each child JVM halts when the test JVM has gone, so a killed test run leaves no broker behind. Called under
 * {@link DefaultKafkaServer}'s lock only: not thread-safe.
 */
final class ProcessKafkaClusterBackend implements KafkaBackend {
    static final int BROKERS = 3;
    static final int CONTROLLER_ID = 1000;
    private static final long START_TIMEOUT_SECONDS = 120;
    /** The controller's {@code broker.session.timeout.ms}. */
    private static final long SESSION_MILLIS = 2_000;
    /**
     * Start-up costs CPU, not waiting: each node spends about 4.5 s of CPU loading and running Kafka's start-up code
     * (measured on the 2-core build machine), so four nodes need 18 s of CPU, and on two cores at least 9 s. Only
     * the client compiler (C2's compile threads doubled the CPU: 36 s), no verification of the bytecode of Kafka's
     * jars (a fifth less), the serial collector (one GC thread) and a small heap; a test cluster never runs long
     * enough to profit from C2.
     */
    private static final List<String> JVM_OPTIONS = List.of("-Xms64m", "-Xmx320m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-XX:+UnlockDiagnosticVMOptions", "-XX:-BytecodeVerificationRemote",
            "-XX:-UsePerfData", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");

    private final Path directory;
    private final String clusterId = Uuid.randomUuid().toString();
    private final int[] brokerPorts = new int[BROKERS];
    private final ServerProcess[] brokers = new ServerProcess[BROKERS];
    /** When each broker was last killed ({@link System#nanoTime()}), or 0. */
    private final long[] killedAt = new long[BROKERS];
    private int controllerPort;
    private ServerProcess controller;
    private String bootstrapServers;

    ProcessKafkaClusterBackend() {
        this.directory = ServerFiles.instance("kafka-cluster");
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EMBEDDED;
    }

    @Override
    public String version() {
        return AppInfoParser.getVersion();
    }

    @Override
    public int brokers() {
        return BROKERS;
    }

    @Override
    public short replicationFactor() {
        return BROKERS;
    }

    @Override
    public void start() {
        if (controller == null) {
            create();
        }
        if (!controller.isAlive()) {
            controller.start(command(nodeDirectory(CONTROLLER_ID)));
        }
        for (int i = 0; i < BROKERS; i++) {
            if (!brokers[i].isAlive()) {
                brokers[i].start(command(nodeDirectory(i)));
            }
        }
        awaitBrokers(allBrokers(), false);
    }

    /** Picks the ports, writes each node's properties and formats its storage (in this JVM: no extra start-up). */
    private void create() {
        controllerPort = ServerProcess.freePort();
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < BROKERS; i++) {
            brokerPorts[i] = ServerProcess.freePort();
            addresses.add("127.0.0.1:" + brokerPorts[i]);
        }
        bootstrapServers = String.join(",", addresses);
        writeNode(CONTROLLER_ID, controllerProperties());
        controller = new ServerProcess("Kafka controller " + CONTROLLER_ID, nodeDirectory(CONTROLLER_ID),
                nodeDirectory(CONTROLLER_ID).resolve("server.log"));
        for (int i = 0; i < BROKERS; i++) {
            writeNode(i, brokerProperties(i));
            brokers[i] = new ServerProcess("Kafka broker " + i, nodeDirectory(i),
                    nodeDirectory(i).resolve("server.log"));
        }
    }

    private Map<String, String> common(int nodeId) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("node.id", Integer.toString(nodeId));
        p.put("controller.quorum.voters", CONTROLLER_ID + "@127.0.0.1:" + controllerPort);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT");
        p.put("log.dirs", nodeDirectory(nodeId).resolve("data").toString());
        // A killed broker is fenced (and a restarted one may register again) once its session expired: 9 s by
        // default, 2 s here.
        p.put("broker.session.timeout.ms", Long.toString(SESSION_MILLIS));
        p.put("broker.heartbeat.interval.ms", "500");
        // Topic defaults: the controller applies them when it creates a topic, the leader when it appends.
        p.put("default.replication.factor", Integer.toString(BROKERS));
        p.put("min.insync.replicas", "2");
        p.put("offsets.topic.replication.factor", Integer.toString(BROKERS));
        p.put("offsets.topic.num.partitions", "5");
        p.put("transaction.state.log.replication.factor", Integer.toString(BROKERS));
        p.put("transaction.state.log.min.isr", "2");
        p.put("transaction.state.log.num.partitions", "5");
        p.put("auto.create.topics.enable", "false");
        p.put("group.initial.rebalance.delay.ms", "0");
        // Fewer threads and less memory than a production node needs: four JVMs share a small test machine.
        p.put("num.network.threads", "2");
        p.put("num.io.threads", "2");
        p.put("background.threads", "2");
        p.put("num.recovery.threads.per.data.dir", "1");
        p.put("log.cleaner.threads", "1");
        // Kafka's default reserves 128 MiB of heap for the log cleaner; 2 MiB is the least it accepts.
        p.put("log.cleaner.dedupe.buffer.size", "2097152");
        p.put("unstable.api.versions.enable", "false");
        p.put("unstable.feature.versions.enable", "false");
        return p;
    }

    private Map<String, String> controllerProperties() {
        Map<String, String> p = common(CONTROLLER_ID);
        p.put("process.roles", "controller");
        p.put("listeners", "CONTROLLER://127.0.0.1:" + controllerPort);
        return p;
    }

    private Map<String, String> brokerProperties(int index) {
        Map<String, String> p = common(index);
        p.put("process.roles", "broker");
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPorts[index]);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPorts[index]);
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("num.replica.fetchers", "1");
        return p;
    }

    private void writeNode(int nodeId, Map<String, String> properties) {
        Path dir = ServerFiles.createDirectories(nodeDirectory(nodeId));
        Path data = ServerFiles.createDirectories(dir.resolve("data"));
        StringBuilder text = new StringBuilder();
        properties.forEach((k, v) -> text.append(k).append('=').append(v.replace("\\", "\\\\")).append('\n'));
        try {
            Files.writeString(dir.resolve("server.properties"), text, StandardCharsets.UTF_8);
            new Formatter()
                    .setPrintStream(new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8))
                    .setNodeId(nodeId)
                    .setClusterId(clusterId)
                    .setDirectories(List.of(data.toString()))
                    .setMetadataLogDirectory(data.toString())
                    .setReleaseVersion(MetadataVersion.latestProduction())
                    .setControllerListenerName("CONTROLLER")
                    .run();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the configuration of Kafka node " + nodeId + " in " + dir, e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot format the storage of Kafka node " + nodeId + " in " + data + ": "
                    + e, e);
        }
    }

    private List<String> command(Path nodeDirectory) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(JVM_OPTIONS);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(KafkaNodeMain.class.getName());
        command.add(Long.toString(ProcessHandle.current().pid()));
        command.add(nodeDirectory.resolve("server.properties").toString());
        return command;
    }

    private Path nodeDirectory(int nodeId) {
        return directory.resolve(nodeId == CONTROLLER_ID ? "controller" : "broker-" + nodeId);
    }

    private Set<Integer> allBrokers() {
        Set<Integer> all = new TreeSet<>();
        for (int i = 0; i < BROKERS; i++) {
            all.add(i);
        }
        return all;
    }

    @Override
    public void broker(int index, boolean run) {
        if (index < 0 || index >= BROKERS) {
            throw new IllegalArgumentException("broker " + index + " does not exist: the cluster has brokers 0 to "
                    + (BROKERS - 1));
        }
        if (controller == null) {
            throw new IllegalStateException("the Kafka cluster in " + directory + " has not been started");
        }
        if (run == brokers[index].isAlive()) {
            return;
        }
        if (run) {
            brokers[index].start(command(nodeDirectory(index)));
            awaitBrokers(Set.of(index), true);
        } else {
            brokers[index].kill();
            killedAt[index] = System.nanoTime();
        }
    }

    /**
     * Waits until the controller counts {@code expected} among its live (registered, unfenced) brokers and, with
     * {@code inSync}, until each of them is in the in-sync replicas of every partition it holds; fails with the end
     * of a node's log if its process has exited.
     *
     * <p>A broker killed a moment ago is still registered, unfenced and in sync until its session expires: the
     * controller has not noticed yet. So for a killed broker, the new process counts only once the old one has been
     * seen fenced (or gone), or its session has certainly expired; the new process cannot register before that anyway.
     */
    private void awaitBrokers(Set<Integer> expected, boolean inSync) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        try (Admin admin = Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                AdminClientConfig.CLIENT_ID_CONFIG, "outbox-test-servers-cluster-admin",
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3_000,
                AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200))) {
            Set<Integer> stale = new TreeSet<>();
            for (int i : expected) {
                if (killedAt[i] != 0) {
                    stale.add(i);
                }
            }
            Supplier<String> state = () -> "brokers " + expected + " of the Kafka cluster at " + bootstrapServers
                    + (inSync ? " back in sync" : " registered") + " within " + START_TIMEOUT_SECONDS + " s; see "
                    + directory;
            while (true) {
                controller.checkAlive();
                for (int i : expected) {
                    brokers[i].checkAlive();
                }
                forget(admin, stale);
                if (stale.isEmpty() && ready(admin, expected, inSync)) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("timed out waiting for " + state.get());
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        }
    }

    /**
     * Removes from {@code stale} each broker whose old registration the controller has fenced (or dropped), or whose
     * session has certainly expired (twice the session timeout after the kill).
     */
    private void forget(Admin admin, Set<Integer> stale) {
        if (stale.isEmpty()) {
            return;
        }
        stale.removeIf(i -> System.nanoTime() - killedAt[i] >= TimeUnit.MILLISECONDS.toNanos(2 * SESSION_MILLIS));
        try {
            Collection<Node> all = admin.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true))
                    .nodes().get(3, TimeUnit.SECONDS);
            Set<Integer> unfenced = all.stream().filter(n -> !n.isFenced()).map(Node::id).collect(Collectors.toSet());
            stale.removeIf(i -> !unfenced.contains(i));
        } catch (ExecutionException | TimeoutException e) {
            // ask again
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the Kafka cluster", e);
        }
    }

    private static boolean ready(Admin admin, Set<Integer> expected, boolean inSync) {
        try {
            Collection<Node> live = admin.describeCluster().nodes().get(3, TimeUnit.SECONDS);
            Set<Integer> ids = live.stream().map(Node::id).collect(Collectors.toSet());
            if (!ids.containsAll(expected)) {
                return false;
            }
            if (!inSync) {
                return true;
            }
            Set<String> topics = admin.listTopics(new ListTopicsOptions().listInternal(true)).names()
                    .get(3, TimeUnit.SECONDS);
            Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames()
                    .get(3, TimeUnit.SECONDS);
            for (TopicDescription t : described.values()) {
                for (TopicPartitionInfo p : t.partitions()) {
                    Set<Integer> isr = p.isr().stream().map(Node::id).collect(Collectors.toSet());
                    for (Node replica : p.replicas()) {
                        if (expected.contains(replica.id()) && !isr.contains(replica.id())) {
                            return false;
                        }
                    }
                }
            }
            return true;
        } catch (ExecutionException | TimeoutException e) {
            return false; // not up yet, or a topic changed under us: ask again
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the Kafka cluster", e);
        }
    }

    @Override
    public void stop() {
        for (ServerProcess b : brokers) {
            if (b != null) {
                b.kill();
            }
        }
    }

    @Override
    public void close() {
        stop();
        if (controller != null) {
            controller.kill();
        }
    }

    @Override
    public String bootstrapServers() {
        return bootstrapServers;
    }

    @Override
    public String describe() {
        return "3 brokers and a controller in child JVMs, files in " + directory;
    }
}
