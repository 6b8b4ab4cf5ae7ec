package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The real jar with its defaults where the README promises safety: with no {@code sidecar.operator} configured, every
 * request to the operator API and the console is refused, whatever credentials it carries (and nothing is done:
 * a parked record stays parked); and with no {@code http.address} nor {@code management.address}, both ports listen
 * on 127.0.0.1 only: a connection to another address of this machine (127.0.0.2, which Linux routes to the loopback
 * interface, and each non-loopback address) is refused, where a socket bound to every address accepts it.
 */
class SidecarSecurityDefaultsTest {
    private static final String TOPIC = "sidecar-defaults";
    /** Long enough to be a valid token (16 characters): the sidecar has none, so it must refuse it. */
    private static final String SOME_TOKEN = "some-token-0123456789abcdef";

    @Test
    void withNoOperatorEveryRequestIsRefusedAndBothPortsListenOnLocalhostOnly() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-defaults"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_defaults");
        DataSource db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic(TOPIC, 1);
        int httpPort = SidecarProcess.freePort();
        int managementPort = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        // No operator, no http.address, no management.address.
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  management:
                    port: %d
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: %s
                        password: ${DEFAULTS_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                """.formatted(httpPort, managementPort, kafka.bootstrapServers(), url, postgres.username()));
        // A row the store cannot read (header arrays of different lengths): parked at once.
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value, header_names, header_values) VALUES ('" + TOPIC
                + "', 'poison', convert_to('bad', 'UTF8'), '{a,b}', '{}')");
        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), managementPort,
                Map.of("DEFAULTS_DB_PASSWORD", postgres.password()))) {
            // Actuator answers on the management port: the refusals below are the sidecar's, not a server down.
            sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            Await.untilOrFail(() -> Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked") == 1,
                    Duration.ofSeconds(60), () -> "the poison row is parked; log:\n" + sidecar.log());
            long id = Jdbc.queryLong(db, "SELECT id FROM outbox_parked");
            assertThat(sidecar.log()).contains("Operator API and console off: no sidecar.operator credentials"
                    + " configured");

            // 1. No operator configured: every request to the API and the console is refused.
            Map<String, Map<String, String>> credentials = new LinkedHashMap<>();
            credentials.put("no credentials", Map.of());
            credentials.put("HTTP basic", Map.of("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                    "operator:change-me".getBytes(StandardCharsets.UTF_8))));
            credentials.put("a bearer token", Map.of("Authorization", "Bearer " + SOME_TOKEN));
            List<String> answers = new ArrayList<>();
            for (Map.Entry<String, Map<String, String>> c : credentials.entrySet()) {
                for (String path : List.of("/api/outboxes", "/api/outboxes/orders/parked",
                        "/api/outboxes/orders/parked/" + id, "/api/csrf", "/console", "/console/outboxes/orders", "/",
                        "/login")) {
                    HttpResponse<String> r = SidecarProcess.get(httpPort, path, c.getValue());
                    answers.add("GET " + path + " with " + c.getKey() + ": " + r.statusCode());
                    assertThat(r.statusCode()).as("GET %s with %s: %s", path, c.getKey(), r.body()).isIn(401, 403);
                    assertThat(r.body()).as("GET %s with %s", path, c.getKey()).doesNotContain("poison")
                            .doesNotContain("backlog");
                }
                for (String path : List.of("/api/outboxes/orders/parked/replay",
                        "/api/outboxes/orders/parked/discard", "/console/outboxes/orders/replay",
                        "/console/outboxes/orders/discard")) {
                    HttpResponse<String> r = SidecarProcess.post(httpPort, path, "{\"ids\":[" + id + "]}",
                            c.getValue());
                    answers.add("POST " + path + " with " + c.getKey() + ": " + r.statusCode());
                    assertThat(r.statusCode()).as("POST %s with %s: %s", path, c.getKey(), r.body()).isIn(401, 403);
                }
            }
            assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked WHERE id = " + id))
                    .as("the parked record, after every replay and discard was refused").isOne();
            assertThat(sidecar.log()).doesNotContain("AUDIT");

            // 2. No address configured: both ports listen on 127.0.0.1 only.
            assertThat(connects(InetAddress.getLoopbackAddress(), httpPort)).as("127.0.0.1, HTTP port").isTrue();
            assertThat(connects(InetAddress.getLoopbackAddress(), managementPort)).as("127.0.0.1, management port")
                    .isTrue();
            List<InetAddress> others = otherAddresses();
            try (ServerSocket everywhere = new ServerSocket()) {
                everywhere.bind(new InetSocketAddress(0)); // every address: the control
                for (InetAddress a : others) {
                    assertThat(connects(a, everywhere.getLocalPort()))
                            .as("%s reaches a socket bound to every address (the check's control)", a).isTrue();
                    assertThat(connects(a, httpPort)).as("%s, HTTP port", a).isFalse();
                    assertThat(connects(a, managementPort)).as("%s, management port", a).isFalse();
                }
            }
            System.out.printf("sidecar defaults: no operator configured, %d requests to the API and the console"
                    + " refused (%s), the parked record untouched; both ports (HTTP %d, management %d) accept on"
                    + " 127.0.0.1 and refuse on %s%n", answers.size(), String.join("; ", answers), httpPort,
                    managementPort, others);
        }
    }

    /**
     * 127.0.0.2 (on Linux the whole of 127.0.0.0/8 reaches the loopback interface, so a server bound to every
     * address answers there, one bound to 127.0.0.1 does not) and this machine's IPv4 addresses outside the loopback.
     */
    private static List<InetAddress> otherAddresses() throws IOException {
        List<InetAddress> out = new ArrayList<>();
        out.add(InetAddress.getByAddress(new byte[] {127, 0, 0, 2}));
        for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            try {
                if (!n.isUp() || n.isLoopback()) {
                    continue;
                }
            } catch (SocketException e) {
                continue;
            }
            for (InetAddress a : Collections.list(n.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    out.add(a);
                }
            }
        }
        return out;
    }

    /** Whether a TCP connection to {@code address}:{@code port} is accepted (false: refused or no answer in 2 s). */
    private static boolean connects(InetAddress address, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(address, port), 2_000);
            return true;
        } catch (IOException e) {
            return false; // refused, timed out, unreachable
        }
    }
}
