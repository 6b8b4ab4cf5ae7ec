package dev.outbox.sidecar;

import dev.outbox.FailedMessage;
import dev.outbox.MessageIds;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The console's inbox failures in a real headless Chromium: the overview's "Inbox failures" section names the
 * consumer with a failed message, its link lists the message by its id with the reason, and the id opens it in
 * full with its payload.
 */
class SidecarConsoleInboxBrowserTest {
    private static final String PASSWORD = "inbox-browser-operator-pw";

    @Test
    void aFailedMessageIsFoundFromTheOverviewByItsConsumerAndShownInFull() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-console-inbox"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_console_inbox");
        DataSource db = postgres.dataSource(url);
        PostgresStore.builder(db).build().createSchema();
        PostgresInbox inbox = PostgresInbox.builder(db).table("billing_inbox").build();
        inbox.createSchema();
        UUID id = MessageIds.next();
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            inbox.recordFailure(c, new FailedMessage("invoicing", id, "orders", 1, 17, "order-17",
                    "{\"order\":17}".getBytes(StandardCharsets.UTF_8), 5, "IllegalStateException: no such customer",
                    null));
            c.commit();
        }
        KafkaServer kafka = TestServers.kafka();
        int port = SidecarProcess.freePort();
        Path config = dir.resolve("outbox.yaml");
        Files.writeString(config, """
                sidecar:
                  http:
                    port: %1$d
                  operator:
                    username: operator
                    password: ${INBOX_BROWSER_OPERATOR_PASSWORD}
                  kafka:
                    bootstrap-servers: %2$s
                  outboxes:
                    orders:
                      datasource:
                        url: %3$s
                        username: %4$s
                        password: ${INBOX_BROWSER_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                  inboxes:
                    billing:
                      datasource:
                        url: %3$s
                        username: %4$s
                        password: ${INBOX_BROWSER_DB_PASSWORD}
                      table: billing_inbox
                """.formatted(port, kafka.bootstrapServers(), url, postgres.username()));
        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("INBOX_BROWSER_DB_PASSWORD", postgres.password(), "INBOX_BROWSER_OPERATOR_PASSWORD",
                        PASSWORD));
             ConsoleBrowser browser = openWhenReady(sidecar, dir, port)) {
            browser.signIn("operator", PASSWORD);
            assertThat(browser.find(By.id("outboxes")).getText()).contains("orders");
            WebElement inboxes = browser.find(By.id("inboxes"));
            assertThat(inboxes.getText()).contains("billing").contains("\"billing_inbox_failed\"")
                    .contains("invoicing");

            browser.clickThen(By.linkText("invoicing"), By.id("failed"));
            assertThat(browser.find(By.id("consumer")).getText()).isEqualTo("invoicing");
            WebElement row = browser.find(By.cssSelector("#failed td.message-id")).findElement(By.xpath(".."));
            assertThat(row.findElement(By.cssSelector("td.message-id")).getText()).isEqualTo(id.toString());
            assertThat(row.findElement(By.cssSelector("td.reason")).getText())
                    .isEqualTo("IllegalStateException: no such customer");
            assertThat(row.findElement(By.cssSelector("td.payload")).getText()).isEqualTo("{\"order\":17}");

            browser.clickThen(By.linkText(id.toString()), By.id("payload"));
            assertThat(browser.find(By.tagName("h1")).getText())
                    .isEqualTo("Failed message " + id + " of invoicing");
            assertThat(browser.find(By.id("reason")).getText()).isEqualTo("IllegalStateException: no such customer");
            assertThat(browser.find(By.id("payload")).getText()).isEqualTo("{\"order\":17}");
            assertThat(browser.find(By.id("download")).getAttribute("href"))
                    .endsWith("/api/inboxes/billing/failed/" + id + "/value?consumer=invoicing");
        }
    }

    /** The browser, once the sidecar is ready. */
    private static ConsoleBrowser openWhenReady(SidecarProcess sidecar, Path dir, int port) throws Exception {
        sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
        return ConsoleBrowser.open(dir, port);
    }
}
