package dev.outbox.testservers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.common.utils.AppInfoParser;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.mariadb.MariaDBContainer;
import org.testcontainers.mysql.MySQLContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * Docker: whether an engine answers, and the servers started in it by Testcontainers. Images default to
 * {@code postgres:17-alpine}, {@code mysql:8.0}, {@code mariadb:11.4} and {@code apache/kafka:<client version>};
 * system properties {@code outbox.test.<postgres|mysql|mariadb|kafka>.image} override them. Thread-safe
 * (stateless).
 */
final class DockerServers {
    private static final Logger LOG = LoggerFactory.getLogger(DockerServers.class);
    private static final int TIMEOUT_MILLIS = 2000;

    private DockerServers() {
    }

    /**
     * Whether a Docker engine answers {@code /_ping} at {@code DOCKER_HOST}, or at {@code /var/run/docker.sock} or
     * {@code ~/.docker/run/docker.sock} when it is not set. Asked directly (not through Testcontainers) so that a
     * machine without Docker costs no time and no error logs.
     */
    static boolean dockerAnswers() {
        String host = System.getenv("DOCKER_HOST");
        if (host != null && !host.isBlank()) {
            return answers(host);
        }
        for (Path socket : List.of(Paths.get("/var/run/docker.sock"),
                Paths.get(System.getProperty("user.home"), ".docker", "run", "docker.sock"))) {
            if (Files.exists(socket) && answers("unix://" + socket)) {
                return true;
            }
        }
        return false;
    }

    /** Whether a Docker engine answers at {@code dockerHost} ({@code unix:///path} or {@code tcp://host:port}). */
    static boolean answers(String dockerHost) {
        try {
            URI uri = URI.create(dockerHost);
            if ("unix".equals(uri.getScheme())) {
                return ping(Paths.get(uri.getPath()));
            }
            if ("tcp".equals(uri.getScheme())) {
                return ping(new InetSocketAddress(uri.getHost(), uri.getPort()));
            }
            LOG.info("DOCKER_HOST '{}' is neither unix:// nor tcp://; not using Docker", dockerHost);
            return false;
        } catch (IOException | RuntimeException e) {
            LOG.debug("No Docker engine answers at {}: {}", dockerHost, e.toString());
            return false;
        }
    }

    private static final byte[] PING = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private static boolean ping(Path socket) throws IOException {
        try (SocketChannel channel = SocketChannel.open(UnixDomainSocketAddress.of(socket));
             Selector selector = Selector.open()) {
            ByteBuffer request = ByteBuffer.wrap(PING);
            while (request.hasRemaining()) {
                channel.write(request);
            }
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ);
            ByteBuffer answer = ByteBuffer.allocate(64);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
            while (answer.position() < 16 && System.nanoTime() - deadline < 0) {
                selector.select(TIMEOUT_MILLIS);
                selector.selectedKeys().clear();
                if (channel.read(answer) < 0) {
                    break;
                }
            }
            return isOk(new String(answer.array(), 0, answer.position(), StandardCharsets.US_ASCII));
        }
    }

    private static boolean ping(InetSocketAddress address) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(address, TIMEOUT_MILLIS);
            socket.setSoTimeout(TIMEOUT_MILLIS);
            OutputStream out = socket.getOutputStream();
            out.write(PING);
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] answer = in.readNBytes(64);
            return isOk(new String(answer, StandardCharsets.US_ASCII));
        }
    }

    private static boolean isOk(String statusLine) {
        return statusLine.startsWith("HTTP/") && statusLine.contains(" 200 ");
    }

    /** The image for {@code server}: system property {@code outbox.test.<server>.image}, else {@code fallback}. */
    static String image(String server, String fallback) {
        String configured = System.getProperty("outbox.test." + server + ".image");
        return configured == null || configured.isBlank() ? fallback : configured.trim();
    }

    static KafkaBackend kafka() {
        return new DockerKafkaBackend(image("kafka", "apache/kafka:" + AppInfoParser.getVersion()));
    }

    static JdbcBackend jdbc(JdbcServer.Kind kind) {
        switch (kind) {
            case POSTGRES:
                return new DockerJdbcBackend(kind, new PostgreSQLContainer(image("postgres", "postgres:17-alpine"))
                        .withDatabaseName("test"), 5432);
            case MYSQL:
                return new DockerJdbcBackend(kind, new MySQLContainer(image("mysql", "mysql:8.0"))
                        .withDatabaseName("test").withUsername("root"), 3306);
            case MARIADB:
                return new DockerJdbcBackend(kind, new MariaDBContainer(image("mariadb", "mariadb:11.4"))
                        .withDatabaseName("test").withUsername("root"), 3306);
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    /**
     * Binds {@code containerPort} to a host port chosen now, so that the address survives a stop and start of
     * the container (Docker would otherwise pick a new one).
     */
    static int bindFixedPort(GenericContainer<?> container, int containerPort) {
        int hostPort = ServerProcess.freePort();
        container.withCreateContainerCmdModifier(cmd -> cmd.getHostConfig().withPortBindings(
                new PortBinding(Ports.Binding.bindPort(hostPort), new ExposedPort(containerPort))));
        return hostPort;
    }

    /** Kills the container's main process (SIGKILL); the container and its files stay. */
    static void kill(GenericContainer<?> container) {
        DockerClient client = DockerClientFactory.instance().client();
        client.killContainerCmd(container.getContainerId()).exec();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (Boolean.TRUE.equals(client.inspectContainerCmd(container.getContainerId()).exec().getState()
                .getRunning())) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("container " + container.getContainerId() + " still runs 30 s after kill");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Freezes ({@code docker pause}) or thaws ({@code docker unpause}) the container's processes. */
    static void pause(GenericContainer<?> container, boolean paused) {
        DockerClient client = DockerClientFactory.instance().client();
        if (paused) {
            client.pauseContainerCmd(container.getContainerId()).exec();
        } else {
            client.unpauseContainerCmd(container.getContainerId()).exec();
        }
    }

    /** Starts a killed container again. */
    static void restart(GenericContainer<?> container) {
        DockerClientFactory.instance().client().startContainerCmd(container.getContainerId()).exec();
    }

    /** Polls {@code ready} every 100 ms until it returns without throwing, for at most 60 s. */
    static void await(String what, Callable<?> ready) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Exception last = null;
        while (System.nanoTime() - deadline < 0) {
            try {
                ready.call();
                return;
            } catch (Exception e) {
                last = e;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
        throw new IllegalStateException(what + " not ready within 60 s", last);
    }
}
