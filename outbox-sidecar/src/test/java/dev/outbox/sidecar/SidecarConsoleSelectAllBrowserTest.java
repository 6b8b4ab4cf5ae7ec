package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

import javax.sql.DataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The console in a real headless Chromium: each parked record shows its message id, and the filter finds one by it;
 * filtered by topic, "Replay all N matching" leads to a confirmation naming the number and the filter, and the
 * confirmed replay puts back exactly those records, which are published; the others stay parked.
 */
class SidecarConsoleSelectAllBrowserTest {
    private static final String PASSWORD = "select-all-operator-pw";
    private static final String TOPIC = "sidecar-console-select-all";
    private static final String OTHER = "sidecar-console-select-all-other";

    @Test
    void theMessageIdIsShownAndSearchableAndAllMatchingRecordsAreReplayedAfterTheConfirmation() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-console-select-all"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_console_select_all");
        DataSource db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        KafkaServer kafka = TestServers.kafka();
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %d
                  operator:
                    username: operator
                    password: ${SELECT_ALL_OPERATOR_PASSWORD}
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: %s
                        password: ${SELECT_ALL_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                        max-attempts: 1
                """.formatted(port, kafka.bootstrapServers(), url, postgres.username()));
        // Neither topic exists yet: the four rows are parked ("topic ... does not exist").
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES ('" + TOPIC + "', 'k0', convert_to('v0', 'UTF8')),"
                + " ('" + OTHER + "', 'k1', convert_to('v1', 'UTF8')), ('" + TOPIC + "', 'k2', convert_to('v2', 'UTF8')),"
                + " ('" + TOPIC + "', 'k3', convert_to('v3', 'UTF8'))");
        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("SELECT_ALL_DB_PASSWORD", postgres.password(), "SELECT_ALL_OPERATOR_PASSWORD", PASSWORD))) {
            sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            Await.untilOrFail(() -> Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked") == 4,
                    Duration.ofSeconds(60), () -> "the rows are parked; log:\n" + sidecar.log());
            kafka.createTopic(TOPIC, 1);
            List<String> messageIds = new ArrayList<>();
            for (String key : List.of("k0", "k1", "k2", "k3")) {
                messageIds.add(Jdbc.queryString(db, "SELECT CAST(message_id AS text) FROM outbox_parked WHERE key = '"
                        + key + "'"));
            }

            try (ConsoleBrowser browser = ConsoleBrowser.open(dir, port)) {
                browser.signIn("operator", PASSWORD);
                browser.get("/console/outboxes/orders");
                assertThat(browser.find(By.id("parked")).findElements(By.cssSelector("td.message-id")))
                        .extracting(WebElement::getText).as("each record's message id, by id")
                        .containsExactlyElementsOf(messageIds);

                // Found by its message id.
                browser.find(By.name("messageId")).sendKeys(messageIds.get(2));
                browser.clickThen(By.cssSelector("#filter button[type=submit]"), By.id("parked"));
                assertThat(browser.driver().findElements(By.cssSelector("#parked td.message-id")))
                        .extracting(WebElement::getText).containsExactly(messageIds.get(2));
                assertThat(browser.find(By.id("matching")).getText())
                        .isEqualTo("1 record(s) match (message id " + messageIds.get(2) + ").");

                // Filtered by topic: all three replayed after the confirmation, which names the number.
                browser.find(By.name("messageId")).clear();
                browser.find(By.name("topic")).sendKeys(TOPIC);
                WebElement replayAll = browser.clickThen(By.cssSelector("#filter button[type=submit]"),
                        By.id("replay-all"));
                assertThat(browser.find(By.id("matching")).getText())
                        .isEqualTo("3 record(s) match (topic '" + TOPIC + "').");
                assertThat(replayAll.getText()).isEqualTo("Replay all 3 matching…");
                WebElement yes = browser.clickThen(By.id("replay-all"), By.id("confirm-replay-matching"));
                assertThat(browser.find(By.tagName("h1")).getText())
                        .isEqualTo("Replay all 3 parked record(s) of orders matching the filter?");
                assertThat(browser.find(By.id("filter-described")).getText())
                        .isEqualTo("The filter: topic '" + TOPIC + "'.");
                assertThat(yes.getText()).isEqualTo("Yes, replay all 3");
                assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked")).as("nothing yet").isEqualTo(4);
                browser.clickThen(By.id("confirm-replay-matching"), By.id("done"));
                assertThat(browser.find(By.id("done")).getText()).isEqualTo("Replayed 3 record(s).");
            }
            assertThat(read(kafka.bootstrapServers(), 3)).as("the replayed records are published, in order")
                    .containsExactly("v0", "v2", "v3");
            assertThat(Jdbc.queryString(db, "SELECT string_agg(key, ',') FROM outbox_parked"))
                    .as("the record of the other topic stays parked").isEqualTo("k1");
            sidecar.awaitLog("AUDIT 'operator' replayed 3 parked record(s) of outbox 'orders' matching topic '" + TOPIC
                    + "' (part 1 of 1)", Duration.ofSeconds(10));
        }
    }

    private static List<String> read(String bootstrap, int n) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap), new StringDeserializer(), new StringDeserializer())) {
            TopicPartition p = new TopicPartition(TOPIC, 0);
            c.assign(List.of(p));
            c.seekToBeginning(List.of(p));
            Await.untilOrFail(() -> {
                c.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                return values.size() >= n;
            }, Duration.ofSeconds(60), () -> n + " records on " + TOPIC + ", read " + values);
        }
        return values;
    }
}
