package dev.outbox.testservers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Docker: whether an engine answers, and the servers started in it. Thread-safe (stateless).
 */
final class DockerServers {
    private static final Logger LOG = LoggerFactory.getLogger(DockerServers.class);
    private static final int TIMEOUT_MILLIS = 2000;

    private DockerServers() {
    }

    /**
     * Whether a Docker engine answers {@code /_ping} at {@code DOCKER_HOST} or at the default socket. Asked
     * directly (not through Testcontainers) so that a machine without Docker costs no time and no error logs.
     */
    static boolean dockerAnswers() {
        String host = System.getenv("DOCKER_HOST");
        try {
            if (host == null || host.isBlank()) {
                Path socket = Paths.get("/var/run/docker.sock");
                return Files.exists(socket) && ping(socket);
            }
            URI uri = URI.create(host);
            if ("unix".equals(uri.getScheme())) {
                return ping(Paths.get(uri.getPath()));
            }
            if ("tcp".equals(uri.getScheme())) {
                return ping(new InetSocketAddress(uri.getHost(), uri.getPort()));
            }
            LOG.info("DOCKER_HOST '{}' is neither unix:// nor tcp://; using embedded servers", host);
            return false;
        } catch (IOException | RuntimeException e) {
            LOG.debug("No Docker engine answers: {}", e.toString());
            return false;
        }
    }

    private static final byte[] PING = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private static boolean ping(Path socket) throws IOException {
        try (SocketChannel channel = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            channel.write(ByteBuffer.wrap(PING));
            ByteBuffer answer = ByteBuffer.allocate(64);
            channel.read(answer);
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

    static KafkaBackend kafka() {
        throw new UnsupportedOperationException("Docker Kafka is not implemented yet");
    }

    static JdbcBackend jdbc(JdbcServer.Kind kind) {
        throw new UnsupportedOperationException("Docker " + kind + " is not implemented yet");
    }
}
