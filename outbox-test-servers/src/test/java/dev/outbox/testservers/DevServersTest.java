package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.io.StringReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DevServers}: the printed properties (and the file written) connect to a database of the application's
 * name and a Kafka broker with its topics, and every server listens on loopback addresses only.
 */
class DevServersTest {
    @TempDir
    Path directory;

    @Test
    void startsTheServersOnLoopbackAndPrintsTheSpringBootProperties() throws Exception {
        Path file = directory.resolve("config").resolve("dev-servers.properties");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String mode = System.getProperty(TestServers.MODE_PROPERTY);
        try {
            DevServers.start(new String[] {"--name=dev_payments", "--topics=dev-payments:2,dev-refunds",
                    "--properties-file=" + file}, new PrintStream(out, true, StandardCharsets.UTF_8));
        } finally {
            if (mode == null) {
                System.clearProperty(TestServers.MODE_PROPERTY);
            }
        }

        Properties printed = load(new StringReader(out.toString(StandardCharsets.UTF_8)));
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            assertThat(load(r)).isEqualTo(printed);
        }
        String url = printed.getProperty("spring.datasource.url");
        assertThat(url).startsWith("jdbc:postgresql://127.0.0.1:").endsWith("/dev_payments");
        try (Connection c = DriverManager.getConnection(url, printed.getProperty("spring.datasource.username"),
                printed.getProperty("spring.datasource.password"));
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT current_database()")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("dev_payments");
        }
        String bootstrap = printed.getProperty("spring.kafka.bootstrap-servers");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            var topics = admin.describeTopics(List.of("dev-payments", "dev-refunds")).allTopicNames().get();
            assertThat(topics.get("dev-payments").partitions()).hasSize(2);
            assertThat(topics.get("dev-refunds").partitions()).hasSize(1);
        }

        if (mode == null) { // DevServers chose embedded servers: Kafka runs in this JVM
            assertThat(TestServers.kafka().mode()).isEqualTo(ServerMode.EMBEDDED);
            // Every socket this JVM listens on is Kafka's (its broker and its controller).
            List<Listener> own = listeners(ownSocketInodes());
            assertThat(own).as("Kafka's listening sockets").isNotEmpty()
                    .extracting(Listener::port).contains(port(bootstrap));
            assertThat(own).as("Kafka's listening sockets").allMatch(Listener::loopback);
            int postgresPort = URI.create(url.substring("jdbc:".length())).getPort();
            List<Listener> postgres = listeners(null).stream().filter(l -> l.port() == postgresPort).toList();
            assertThat(postgres).as("Postgres' listening sockets").isNotEmpty().allMatch(Listener::loopback);
        }
    }

    @Test
    void aBadOptionIsNamed() {
        assertThatThrownBy(() -> DevServers.start(new String[] {"--database=oracle"}, System.out))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--database")
                .hasMessageContaining("'oracle'");
        assertThatThrownBy(() -> DevServers.start(new String[] {"--topics=orders:0"}, System.out))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'orders:0'");
        assertThatThrownBy(() -> DevServers.start(new String[] {"--verbose"}, System.out))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'--verbose'");
    }

    private static Properties load(Reader reader) throws IOException {
        Properties p = new Properties();
        p.load(reader);
        return p;
    }

    private static int port(String bootstrap) {
        return Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
    }

    /** A socket in the LISTEN state, from {@code /proc/net/tcp} or {@code tcp6}. */
    record Listener(String address, int port, long inode) {
        boolean loopback() {
            // IPv4 127.x.x.x (little-endian hex: the last byte is 7F), IPv6 ::1 or ::ffff:127.x.x.x.
            return address.length() == 8 ? address.endsWith("7F")
                    : address.equals("00000000000000000000000001000000")
                    || address.startsWith("0000000000000000FFFF0000") && address.endsWith("7F");
        }
    }

    /** Every listening TCP socket of this network namespace, or only those with the given inodes. */
    private static List<Listener> listeners(Set<Long> inodes) throws IOException {
        List<Listener> result = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path path = Path.of(table);
            if (!Files.exists(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (!f[3].equals("0A")) { // TCP_LISTEN
                    continue;
                }
                String[] local = f[1].split(":");
                long inode = Long.parseLong(f[9]);
                if (inodes == null || inodes.contains(inode)) {
                    result.add(new Listener(local[0], Integer.parseInt(local[1], 16), inode));
                }
            }
        }
        return result;
    }

    /** The inodes of this process's open sockets ({@code /proc/self/fd} links {@code socket:[<inode>]}). */
    private static Set<Long> ownSocketInodes() throws IOException {
        Set<Long> inodes = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                String target;
                try {
                    target = Files.readSymbolicLink(fd).toString();
                } catch (IOException e) {
                    continue; // closed meanwhile
                }
                if (target.startsWith("socket:[")) {
                    inodes.add(Long.parseLong(target.substring(8, target.length() - 1)));
                }
            }
        }
        return inodes;
    }
}
