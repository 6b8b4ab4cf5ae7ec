package dev.outbox.sidecar;

import dev.outbox.FailedMessage;
import dev.outbox.MessageIds;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import javax.sql.DataSource;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static dev.outbox.sidecar.ApiResponses.assertError;
import static dev.outbox.sidecar.ApiResponses.basic;
import static dev.outbox.sidecar.ApiResponses.bearer;
import static dev.outbox.sidecar.ApiResponses.ok;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The inboxes' failed messages through the real jar over real HTTP (Postgres, Kafka): failures recorded by
 * {@link PostgresInbox#recordFailure} are listed per consumer, oldest first, shown one by one with the value in part,
 * downloaded whole, and shown in the console beside the outboxes; every refusal says why in JSON; no credential is a
 * 401. Two inboxes over one table: one shows every consumer with failures, the other only the consumer it names.
 */
class SidecarInboxApiTest {
    private static final String OPERATOR_PASSWORD = "inbox-operator-pw";
    private static final String TOKEN = "inbox-token-0123456789abcdef";
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final String LONG_REASON = "IllegalStateException: no such account 42; " + "why ".repeat(150);
    /** 8 KiB of ff fe: not UTF-8, shown as hex, in part. */
    private static final byte[] LARGE = new byte[8192];

    private static SidecarProcess sidecar;
    private static UUID small;
    private static UUID large;
    private static UUID tombstone;
    private static UUID refund;

    @BeforeAll
    static void start() throws IOException, SQLException {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-inbox-api"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_inbox_api");
        DataSource db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        PostgresInbox inbox = PostgresInbox.builder(db).build();
        inbox.createSchema();
        for (int i = 0; i < LARGE.length; i++) {
            LARGE[i] = (byte) (i % 2 == 0 ? 0xff : 0xfe);
        }
        small = MessageIds.next();
        large = MessageIds.next();
        tombstone = MessageIds.next();
        refund = MessageIds.next();
        // One transaction each: failed_at is the transaction's time, so they are listed in this order.
        record(db, inbox, new FailedMessage("billing", small, "orders", 2, 40, "order-1",
                "{\"order\":1}".getBytes(StandardCharsets.UTF_8), 5, LONG_REASON, null));
        record(db, inbox, new FailedMessage("billing", large, "orders", 2, 41, "order-2", LARGE, 5, "too large",
                null));
        record(db, inbox, new FailedMessage("billing", tombstone, "orders", 0, 7, null, null, 3, "tombstone", null));
        record(db, inbox, new FailedMessage("refunds", refund, "refunds", 0, 1, "r-1",
                "{\"refund\":1}".getBytes(StandardCharsets.UTF_8), 5, "no such order", null));

        KafkaServer kafka = TestServers.kafka();
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %1$d
                  operator:
                    username: operator
                    password: ${INBOX_OPERATOR_PASSWORD}
                    token: %2$s
                  kafka:
                    bootstrap-servers: %3$s
                  outboxes:
                    orders:
                      datasource:
                        url: %4$s
                        username: %5$s
                        password: ${INBOX_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                  inboxes:
                    billing:
                      datasource:
                        url: %4$s
                        username: %5$s
                        password: ${INBOX_DB_PASSWORD}
                    refunds-only:
                      datasource:
                        url: %4$s
                        username: %5$s
                        password: ${INBOX_DB_PASSWORD}
                      table: inbox
                      consumers: [refunds]
                """.formatted(port, TOKEN, kafka.bootstrapServers(), url, postgres.username()));
        sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("INBOX_DB_PASSWORD", postgres.password(), "INBOX_OPERATOR_PASSWORD", OPERATOR_PASSWORD));
        sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
    }

    private static void record(DataSource db, PostgresInbox inbox, FailedMessage failed) throws SQLException {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            inbox.recordFailure(c, failed);
            c.commit();
        }
    }

    @AfterAll
    static void stop() {
        if (sidecar != null) {
            sidecar.close();
        }
    }

    @Test
    void theInboxesAreListedWithTheConsumersTheyShow() {
        JsonNode inboxes = ok(sidecar.get("/api/inboxes", bearer(TOKEN)));
        assertThat(inboxes).hasSize(2);
        JsonNode billing = inboxes.get(0);
        assertThat(billing.get("name").asString()).isEqualTo("billing");
        assertThat(billing.get("type").asString()).isEqualTo("postgres");
        assertThat(billing.get("failedTable").asString()).isEqualTo("\"inbox_failed\"");
        assertThat(billing.get("consumers")).extracting(JsonNode::asString).as("every consumer with failures")
                .containsExactly("billing", "refunds");
        assertThat(billing.get("consumersConfigured").asBoolean()).isFalse();
        JsonNode refundsOnly = inboxes.get(1);
        assertThat(refundsOnly.get("name").asString()).isEqualTo("refunds-only");
        assertThat(refundsOnly.get("consumers")).extracting(JsonNode::asString).containsExactly("refunds");
        assertThat(refundsOnly.get("consumersConfigured").asBoolean()).isTrue();
    }

    @Test
    void aConsumersFailedMessagesAreListedOldestFirstWithoutTheirValues() {
        JsonNode page = ok(sidecar.get("/api/inboxes/billing/failed?consumer=billing", bearer(TOKEN)));
        assertThat(page.get("inbox").asString()).isEqualTo("billing");
        assertThat(page.get("consumer").asString()).isEqualTo("billing");
        assertThat(page.get("more").asBoolean()).isFalse();
        JsonNode records = page.get("records");
        assertThat(records).extracting(r -> r.get("messageId").asString())
                .containsExactly(small.toString(), large.toString(), tombstone.toString());
        JsonNode first = records.get(0);
        assertThat(first.get("consumer").asString()).isEqualTo("billing");
        assertThat(first.get("topic").asString()).isEqualTo("orders");
        assertThat(first.get("partition").asInt()).isEqualTo(2);
        assertThat(first.get("offset").asLong()).isEqualTo(40);
        assertThat(first.get("key").asString()).isEqualTo("order-1");
        assertThat(first.get("attempts").asInt()).isEqualTo(5);
        assertThat(first.get("reason").asString()).isEqualTo(LONG_REASON);
        assertThat(first.get("failedAt").asString()).isNotBlank();
        assertThat(first.get("size").asInt()).isEqualTo(11);
        assertThat(first.get("url").asString()).isEqualTo("/api/inboxes/billing/failed/" + small + "?consumer=billing");
        assertThat(first.has("value")).as("a list carries no values").isFalse();
        assertThat(records.get(2).get("size").isNull()).as("no value").isTrue();

        JsonNode two = ok(sidecar.get("/api/inboxes/billing/failed?consumer=billing&limit=2", bearer(TOKEN)));
        assertThat(two.get("records")).hasSize(2);
        assertThat(two.get("more").asBoolean()).isTrue();
        assertThat(ok(sidecar.get("/api/inboxes/billing/failed?consumer=billing&limit=3", bearer(TOKEN)))
                .get("more").asBoolean()).isFalse();
        assertThat(ok(sidecar.get("/api/inboxes/refunds-only/failed?consumer=refunds", bearer(TOKEN)))
                .get("records")).extracting(r -> r.get("messageId").asString()).containsExactly(refund.toString());
        assertThat(ok(sidecar.get("/api/inboxes/billing/failed?consumer=nobody", bearer(TOKEN))).get("records"))
                .as("a consumer without failures").isEmpty();
    }

    @Test
    void oneFailedMessageIsShownInPartAndDownloadedWhole() throws Exception {
        JsonNode shown = ok(sidecar.get("/api/inboxes/billing/failed/" + large + "?consumer=billing", bearer(TOKEN)));
        assertThat(shown.get("record").get("messageId").asString()).isEqualTo(large.toString());
        assertThat(shown.get("record").get("reason").asString()).isEqualTo("too large");
        assertThat(shown.get("format").asString()).isEqualTo("hex");
        assertThat(shown.get("size").asInt()).isEqualTo(8192);
        assertThat(shown.get("truncated").asBoolean()).isTrue();
        assertThat(shown.get("value").asString()).hasSize(4096 * 3 - 1).startsWith("ff fe ff fe");
        String valueUrl = shown.get("valueUrl").asString();
        assertThat(valueUrl).isEqualTo("/api/inboxes/billing/failed/" + large + "/value?consumer=billing");

        HttpRequest.Builder download = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + sidecar.port()
                + valueUrl)).timeout(Duration.ofSeconds(30));
        bearer(TOKEN).forEach(download::header);
        HttpResponse<byte[]> value = HTTP.send(download.build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(value.statusCode()).isEqualTo(200);
        assertThat(value.headers().firstValue("Content-Disposition"))
                .hasValue("attachment; filename=\"billing-failed-" + large + ".bin\"");
        assertThat(value.body()).isEqualTo(LARGE);

        JsonNode text = ok(sidecar.get("/api/inboxes/billing/failed/" + small.toString().toUpperCase(
                java.util.Locale.ROOT) + "?consumer=billing", bearer(TOKEN)));
        assertThat(text.get("format").asString()).isEqualTo("text");
        assertThat(text.get("value").asString()).isEqualTo("{\"order\":1}");
        assertThat(text.get("truncated").asBoolean()).isFalse();
        assertThat(ok(sidecar.get("/api/inboxes/billing/failed/" + tombstone + "?consumer=billing", bearer(TOKEN)))
                .get("tombstone").asBoolean()).isTrue();
        assertError(sidecar.get("/api/inboxes/billing/failed/" + tombstone + "/value?consumer=billing", bearer(TOKEN)),
                404, "failed message " + tombstone + " of consumer 'billing' in inbox 'billing' has no value");
    }

    @Test
    void everyRefusalSaysWhyInJsonNamingTheParameterAndTheValue() {
        String failed = "/api/inboxes/billing/failed";
        assertError(sidecar.get(failed + "?consumer=billing&limit=101", bearer(TOKEN)), 400,
                "limit must be between 1 and 100: 101");
        assertError(sidecar.get(failed + "?consumer=billing&limit=0", bearer(TOKEN)), 400,
                "limit must be between 1 and 100: 0");
        assertError(sidecar.get(failed + "?consumer=billing&limit=ten", bearer(TOKEN)), 400,
                "limit must be a whole number: 'ten'");
        String required = "consumer is required: the consumer whose failed messages to read (GET /api/inboxes lists"
                + " those shown)";
        assertError(sidecar.get(failed, bearer(TOKEN)), 400, required);
        assertError(sidecar.get(failed + "?consumer=", bearer(TOKEN)), 400, required);
        assertError(sidecar.get(failed + "?consumer=%20", bearer(TOKEN)), 400,
                "consumer must be 1 to 200 characters and not blank: ' '");
        assertError(sidecar.get(failed + "/nope?consumer=billing", bearer(TOKEN)), 400,
                "messageId must be a message id, a UUID such as 0190a6d2-7e1c-7b3a-9c4f-2d5e6f708192: 'nope'");
        UUID unknown = MessageIds.next();
        assertError(sidecar.get(failed + "/" + unknown + "?consumer=billing", bearer(TOKEN)), 404,
                "no failed message " + unknown + " of consumer 'billing' in inbox 'billing'");
        assertError(sidecar.get(failed + "/" + small + "?consumer=refunds", bearer(TOKEN)), 404,
                "no failed message " + small + " of consumer 'refunds' in inbox 'billing'");
        assertError(sidecar.get(failed + "/" + small, bearer(TOKEN)), 400, required);
        assertError(sidecar.get(failed + "/" + small + "?consumer=billing&format=xml", bearer(TOKEN)), 400,
                "format must be text or hex: 'xml'");
        assertError(sidecar.get("/api/inboxes/nope/failed?consumer=billing", bearer(TOKEN)), 404,
                "no inbox named 'nope'");
        assertError(sidecar.get("/api/inboxes/refunds-only/failed?consumer=billing", bearer(TOKEN)), 404,
                "inbox 'refunds-only' shows only the consumers refunds (sidecar.inboxes.refunds-only.consumers), not"
                        + " 'billing'");
    }

    @Test
    void noCredentialIs401WithAChallenge() {
        for (String path : List.of("/api/inboxes", "/api/inboxes/billing/failed?consumer=billing",
                "/api/inboxes/billing/failed/" + small + "?consumer=billing",
                "/api/inboxes/billing/failed/" + small + "/value?consumer=billing")) {
            HttpResponse<String> r = sidecar.get(path, Map.of());
            assertError(r, 401, "authentication required: HTTP basic or a bearer token");
            assertThat(r.headers().allValues("WWW-Authenticate")).as(path).isNotEmpty();
        }
        assertError(sidecar.get("/api/inboxes", basic("operator", "not-the-password")), 401,
                "the user name or password is not right");
        assertThat(ok(sidecar.get("/api/inboxes", basic("operator", OPERATOR_PASSWORD)))).hasSize(2);
    }

    @Test
    void theConsoleShowsTheFailuresBesideTheOutboxesWithReasonAndPayloadCutShort() {
        Map<String, String> operator = basic("operator", OPERATOR_PASSWORD);
        String overview = sidecar.get("/console", operator).body();
        assertThat(overview).contains("<table id='outboxes'>").contains("<h2>Inbox failures</h2>")
                .contains("<a href='/console/inboxes/billing?consumer=billing'>billing</a>, "
                        + "<a href='/console/inboxes/billing?consumer=refunds'>refunds</a>")
                .contains("<a href='/console/inboxes/refunds-only?consumer=refunds'>refunds</a>");

        HttpResponse<String> page = sidecar.get("/console/inboxes/billing", operator);
        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("<span id='consumer'>billing</span> (3)")
                .contains(small.toString()).contains(large.toString()).contains(tombstone.toString())
                .doesNotContain(LONG_REASON).contains(LONG_REASON.substring(0, InboxConsole.REASON_CHARS) + "…")
                .contains("<code>{&quot;order&quot;:1}</code>")
                .contains("<code>" + "ff fe ".repeat(InboxConsole.PAYLOAD_BYTES / 2).strip()
                        + "</code>… (8,192 bytes, hex)")
                .doesNotContain(refund.toString());
        assertThat(sidecar.get("/console/inboxes/billing?consumer=refunds", operator).body())
                .contains(refund.toString()).doesNotContain(small.toString());

        String message = sidecar.get("/console/inboxes/billing/failed/" + large + "?consumer=billing", operator).body();
        assertThat(message).contains("8,192 bytes, as hex; the first 4,096 shown, <b id='payload-hidden'>4,096 bytes"
                        + " hidden</b>")
                .contains("<a id='download' href='/api/inboxes/billing/failed/" + large + "/value?consumer=billing'>");
        assertThat(sidecar.get("/console/inboxes/billing/failed/" + small + "?consumer=billing", operator).body())
                .contains("<pre id='reason'>" + LONG_REASON.strip() );
    }
}
