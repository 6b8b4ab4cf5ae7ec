package dev.outbox.testservers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A RabbitMQ node of this JVM's own, run from Debian's {@code rabbitmq-server} package as a child process: node
 * name {@code outbox-<pid>@localhost}; AMQP, Erlang distribution and port-mapper (epmd) ports free on 127.0.0.1;
 * {@code HOME} (the Erlang cookie), data, logs and configuration under {@code target/outbox-test-servers/rabbitmq-<pid>}.
 * The node's own port mapper is killed with the node at JVM exit. Thread-safe: starting and stopping are serialised
 * by a lock; {@code rabbitmqctl} commands may run alongside each other.
 */
final class RabbitMqNode implements RabbitMqServer {
    /** System property naming the directory of RabbitMQ's scripts; default Debian's. */
    static final String HOME_PROPERTY = "outbox.test.rabbitmq.bin";
    private static final String DEFAULT_BIN = "/usr/lib/rabbitmq/bin";
    private static final Logger LOG = LoggerFactory.getLogger(RabbitMqNode.class);
    private static final long START_TIMEOUT_SECONDS = 60;
    private static final String EPMD_PORT_FILE = "epmd.port";

    private final Path bin;
    private final Path dir;
    private final String node;
    private final int amqpPort;
    private final int distPort;
    private final int epmdPort;
    private final String version;
    private final ServerProcess process;
    /** Written under the lock; read without it by the hooks that may run alongside each other. */
    private volatile boolean running;

    private RabbitMqNode(Path bin, Path dir) {
        this.bin = bin;
        this.dir = dir;
        this.node = "outbox-" + ProcessHandle.current().pid() + "@localhost";
        this.amqpPort = ServerProcess.freePort();
        this.distPort = ServerProcess.freePort();
        this.epmdPort = ServerProcess.freePort();
        this.version = versionOf(bin);
        this.process = new ServerProcess("RabbitMQ " + node, dir, dir.resolve("server.out"));
    }

    /** Starts a node and waits until it accepts AMQP connections. */
    static RabbitMqNode start() {
        Path bin = Paths.get(System.getProperty(HOME_PROPERTY, DEFAULT_BIN));
        if (!Files.isExecutable(bin.resolve("rabbitmq-server"))) {
            throw new IllegalStateException("RabbitMQ is not installed: no " + bin.resolve("rabbitmq-server")
                    + "; install Debian's rabbitmq-server (apt-get install rabbitmq-server, as .ci/run does), set -D"
                    + HOME_PROPERTY + " to the directory of its scripts, or name an existing node with -D"
                    + TestServers.RABBITMQ_URI_PROPERTY + " or " + TestServers.RABBITMQ_URI_VARIABLE);
        }
        killStaleNodes();
        Path dir = ServerFiles.instance("rabbitmq");
        RabbitMqNode n = new RabbitMqNode(bin, dir);
        n.writeFiles();
        n.startEpmd();
        synchronized (n) {
            n.launch();
        }
        return n;
    }

    private void writeFiles() {
        try {
            for (String d : List.of("home", "data", "log", "config")) {
                Files.createDirectories(dir.resolve(d));
            }
            // Only the plugin the per-key consumer topology needs; no management plugin (no HTTP port).
            Files.writeString(dir.resolve("config/enabled_plugins"), "[rabbitmq_consistent_hash_exchange].\n",
                    StandardCharsets.US_ASCII);
            // The default user guest may connect from 127.0.0.1 only, which is all the node listens on; a disk
            // alarm at RabbitMQ's default 50 MB free would block publishers on a nearly full build machine.
            Files.writeString(dir.resolve("config/rabbitmq.conf"), "disk_free_limit.absolute = 1MB\n",
                    StandardCharsets.US_ASCII);
            Files.writeString(dir.resolve("config/rabbitmq-env.conf"), "", StandardCharsets.US_ASCII);
            Files.writeString(dir.resolve(EPMD_PORT_FILE), Integer.toString(epmdPort), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the RabbitMQ node's files under " + dir, e);
        }
    }

    /**
     * Starts the node's port mapper as a daemon on its own port, before the node would start one: with
     * {@code -relaxed_command_check}, so that {@link #killEpmd} stops it even while a killed node is still listed.
     */
    private void startEpmd() {
        ServerProcess.runQuick("epmd", List.of("epmd", "-daemon", "-relaxed_command_check"),
                Map.of("ERL_EPMD_PORT", Integer.toString(epmdPort), "ERL_EPMD_ADDRESS", "127.0.0.1"));
    }

    /** The environment of the node and of its command-line tools. */
    private Map<String, String> environment() {
        Map<String, String> env = new HashMap<>();
        env.put("HOME", dir.resolve("home").toString()); // the Erlang cookie, shared by rabbitmqctl
        env.put("RABBITMQ_NODENAME", node);
        env.put("RABBITMQ_USE_LONGNAME", "false");
        env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_NODE_PORT", Integer.toString(amqpPort));
        env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
        env.put("ERL_EPMD_PORT", Integer.toString(epmdPort));
        env.put("ERL_EPMD_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_MNESIA_BASE", dir.resolve("data").toString());
        env.put("RABBITMQ_LOG_BASE", dir.resolve("log").toString());
        env.put("RABBITMQ_CONFIG_FILE", dir.resolve("config/rabbitmq.conf").toString());
        env.put("RABBITMQ_ENABLED_PLUGINS_FILE", dir.resolve("config/enabled_plugins").toString());
        env.put("RABBITMQ_CONF_ENV_FILE", dir.resolve("config/rabbitmq-env.conf").toString());
        env.put("RABBITMQ_PID_FILE", dir.resolve("data/node.pid").toString());
        return env;
    }

    private void launch() {
        long started = System.nanoTime();
        process.start(List.of(bin.resolve("rabbitmq-server").toString()), environment());
        awaitAmqp(started);
        running = true;
        LOG.info("RabbitMQ {} (embedded) ready at 127.0.0.1:{} as node {} in {} ms", version, amqpPort, node,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }

    /**
     * Waits until the node answers an AMQP protocol header with a method frame ({@code connection.start}): its
     * listener starts last, once the node and its plugins have booted.
     */
    private void awaitAmqp(long startedNanos) {
        long deadline = startedNanos + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        while (!answersAmqp()) {
            process.checkAlive();
            if (System.nanoTime() - deadline > 0) {
                process.kill();
                throw new IllegalStateException("RabbitMQ node " + node + " did not accept AMQP connections on port "
                        + amqpPort + " within " + START_TIMEOUT_SECONDS + " s; end of " + dir.resolve("server.out")
                        + ":\n" + ServerProcess.tail(dir.resolve("server.out"), 15));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    private boolean answersAmqp() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), amqpPort), 1000);
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write(new byte[]{'A', 'M', 'Q', 'P', 0, 0, 9, 1});
            out.flush();
            InputStream in = s.getInputStream();
            return in.read() == 1; // frame type 1: a method (connection.start)
        } catch (IOException e) {
            return false;
        }
    }

    /** Runs {@code rabbitmqctl -n <node> <args>} and returns its output. */
    private String ctl(String... args) {
        List<String> command = new ArrayList<>(List.of(bin.resolve("rabbitmqctl").toString(), "-n", node, "-q"));
        command.addAll(List.of(args));
        return ServerProcess.runQuick("rabbitmqctl " + args[0], command, environment());
    }

    @Override
    public ServerMode mode() {
        return ServerMode.EMBEDDED;
    }

    @Override
    public String version() {
        return version;
    }

    @Override
    public URI uri() {
        return URI.create("amqp://guest:guest@127.0.0.1:" + amqpPort + "/%2F");
    }

    @Override
    public int closeAllConnections() { // not under the lock: rabbitmqctl may run alongside (e.g. resuming a queue)
        requireRunning("close the connections of");
        java.util.Set<String> closing = connectionPids();
        int count = closing.size();
        ctl("close_all_connections", "closed by a test");
        LOG.info("RabbitMQ node {}: closed {} connection(s)", node, count);
        return count;
    }

    @Override
    public String rabbitmqctl(String... arguments) { // not under the lock, as closeAllConnections
        if (arguments.length == 0) {
            throw new IllegalArgumentException("rabbitmqctl needs a command");
        }
        requireRunning("run rabbitmqctl against");
        return ctl(arguments);
    }

    /** The Erlang process ids of the node's client connections. */
    private java.util.Set<String> connectionPids() {
        return ctl("list_connections", "pid").lines().map(String::trim).filter(l -> !l.isEmpty())
                .collect(java.util.stream.Collectors.toSet());
    }

    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        long t = System.nanoTime();
        try {
            ctl("stop");
        } catch (IllegalStateException e) {
            LOG.warn("rabbitmqctl stop failed ({}); killing the node", e.getMessage());
        }
        process.kill(); // after a graceful stop: only reaps it
        running = false;
        LOG.info("RabbitMQ node {} stopped in {} ms", node, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t));
    }

    @Override
    public synchronized void restart() {
        stop();
        launch();
    }

    /** Stops the node and its port mapper at JVM exit. */
    synchronized void shutdown() {
        if (running) {
            running = false;
            process.kill();
        }
        killEpmd(epmdPort);
    }

    private void requireRunning(String what) {
        if (!running) {
            throw new IllegalStateException("cannot " + what + " RabbitMQ node " + node + ": it is stopped");
        }
    }

    /** Kills the port mapper this JVM's node started (a daemon of its own, on a port of its own). */
    private static void killEpmd(int port) {
        try {
            Map<String, String> env = Map.of("ERL_EPMD_PORT", Integer.toString(port));
            ServerProcess.runQuick("epmd -kill", List.of("epmd", "-kill"), env);
        } catch (RuntimeException e) {
            LOG.debug("Could not kill epmd on port {}: {}", port, e.toString());
        }
    }

    /**
     * Kills the nodes (the {@code rabbitmq-server} script and its Erlang VM) and port mappers left running by JVMs
     * that died without their shutdown hook; {@link ServerFiles#instance} then deletes their directories.
     */
    private static void killStaleNodes() {
        Path root = ServerFiles.root();
        try (Stream<Path> children = Files.list(root)) {
            children.filter(p -> p.getFileName().toString().matches("rabbitmq-[0-9]+"))
                    .filter(p -> ProcessHandle.of(Long.parseLong(p.getFileName().toString().substring(9))).isEmpty())
                    .forEach(stale -> {
                        try {
                            Path pidFile = stale.resolve(ServerProcess.PID_FILE);
                            if (Files.isRegularFile(pidFile)) {
                                long pid = Long.parseLong(Files.readString(pidFile, StandardCharsets.US_ASCII).trim());
                                ProcessHandle.of(pid)
                                        .filter(h -> h.info().commandLine().orElse("").contains("rabbitmq-server"))
                                        .ifPresent(h -> {
                                            LOG.warn("Killing RabbitMQ node (pid {}) left running by an earlier test"
                                                    + " run", pid);
                                            h.descendants().forEach(ProcessHandle::destroyForcibly);
                                            h.destroyForcibly();
                                            h.onExit().join();
                                        });
                            }
                            Path epmd = stale.resolve(EPMD_PORT_FILE);
                            if (Files.isRegularFile(epmd)) {
                                killEpmd(Integer.parseInt(Files.readString(epmd, StandardCharsets.US_ASCII).trim()));
                            }
                        } catch (IOException | NumberFormatException e) {
                            LOG.warn("Could not check {} for a stale RabbitMQ node: {}", stale, e.toString());
                        }
                    });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + root, e);
        }
    }

    private static String versionOf(Path bin) {
        try {
            Path real = bin.resolve("rabbitmq-server").toRealPath(); // .../rabbitmq_server-3.10.8/sbin/rabbitmq-server
            Matcher m = Pattern.compile("rabbitmq_server-([0-9][0-9.]*)").matcher(real.toString());
            return m.find() ? m.group(1) : "unknown";
        } catch (IOException e) {
            return "unknown";
        }
    }

    @Override
    public String toString() {
        return "RabbitMQ " + version + " (" + mode().name().toLowerCase(Locale.ROOT) + ") at 127.0.0.1:" + amqpPort
                + " as " + node;
    }
}
