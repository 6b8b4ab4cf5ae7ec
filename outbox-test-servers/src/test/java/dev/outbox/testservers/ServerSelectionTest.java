package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How {@link TestServers} chooses between embedded servers and Docker, against fake Docker engines. */
class ServerSelectionTest {

    @Test
    void modePropertyIsValidated() {
        String before = System.getProperty(TestServers.MODE_PROPERTY);
        try {
            System.setProperty(TestServers.MODE_PROPERTY, "embedded");
            assertThat(TestServers.useDocker()).isFalse();
            System.setProperty(TestServers.MODE_PROPERTY, "docker");
            assertThat(TestServers.useDocker()).isTrue();
            System.setProperty(TestServers.MODE_PROPERTY, "Auto");
            assertThat(TestServers.useDocker()).isEqualTo(DockerServers.dockerAnswers());
            System.setProperty(TestServers.MODE_PROPERTY, "podman");
            assertThatThrownBy(TestServers::useDocker).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'podman'").hasMessageContaining("auto, embedded or docker");
        } finally {
            if (before == null) {
                System.clearProperty(TestServers.MODE_PROPERTY);
            } else {
                System.setProperty(TestServers.MODE_PROPERTY, before);
            }
        }
    }

    @Test
    void aDockerEngineIsRecognisedOverTcp() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            Thread engine = new Thread(() -> answerOnce(server, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"));
            engine.start();
            assertThat(DockerServers.answers("tcp://127.0.0.1:" + server.getLocalPort())).isTrue();
            engine.join(10_000);
        }
    }

    @Test
    void somethingElseOnTheAddressIsNotDocker() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            Thread other = new Thread(() -> answerOnce(server, "SSH-2.0-OpenSSH_9.2\r\n"));
            other.start();
            assertThat(DockerServers.answers("tcp://127.0.0.1:" + server.getLocalPort())).isFalse();
            other.join(10_000);
        }
        assertThat(DockerServers.answers("tcp://127.0.0.1:" + ServerProcess.freePort())).isFalse();
        assertThat(DockerServers.answers("npipe:////./pipe/docker_engine")).isFalse();
    }

    @Test
    void aDockerEngineIsRecognisedOnAUnixSocket(@TempDir Path dir) throws Exception {
        Path socket = dir.resolve("docker.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            Thread engine = new Thread(() -> {
                try (SocketChannel client = server.accept()) {
                    client.read(ByteBuffer.allocate(256));
                    client.write(ByteBuffer.wrap("HTTP/1.1 200 OK\r\n\r\nOK".getBytes(StandardCharsets.US_ASCII)));
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            engine.start();
            assertThat(DockerServers.answers("unix://" + socket)).isTrue();
            engine.join(10_000);
        }
        Files.deleteIfExists(socket);
        assertThat(DockerServers.answers("unix://" + socket)).isFalse();
    }

    private static void answerOnce(ServerSocket server, String answer) {
        try (Socket client = server.accept()) {
            InputStream in = client.getInputStream();
            in.read(new byte[256]);
            OutputStream out = client.getOutputStream();
            out.write(answer.getBytes(StandardCharsets.US_ASCII));
            out.flush();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
