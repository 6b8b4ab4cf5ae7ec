package dev.outbox.sidecar;

import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

import javax.sql.DataSource;
import java.io.File;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The console in a real headless Chromium (Debian's chromium and chromium-driver, see .ci/run): an operator logs in,
 * sees a parked record's reason, replays it after the confirmation step, and the record is published; requests
 * without credentials or without the CSRF token are refused. Saves a screenshot of the console for the README.
 */
class SidecarConsoleBrowserTest {
    private static final String CHROMIUM = "/usr/bin/chromium";
    private static final String CHROMEDRIVER = "/usr/bin/chromedriver";
    private static final String PASSWORD = "console-operator-pw";
    private static final String TOPIC = "sidecar-console-late-topic";
    private static final String FORM = "application/x-www-form-urlencoded";

    @Test
    void anOperatorLogsInSeesTheReasonAndReplaysAParkedRecordWhichIsPublished() throws Exception {
        Path dir = Files.createDirectories(Path.of("target", "sidecar-console"));
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("sidecar_console");
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
                    password-file: %s
                  kafka:
                    bootstrap-servers: %s
                  outboxes:
                    orders:
                      datasource:
                        url: %s
                        username: %s
                        password: ${CONSOLE_DB_PASSWORD}
                      dispatcher:
                        leader-election: false
                        max-attempts: 1
                """.formatted(port, write(dir.resolve("operator-password"), PASSWORD + "\n"),
                kafka.bootstrapServers(), url, postgres.username()));
        // The topic does not exist yet: the row is parked ("topic ... does not exist").
        Jdbc.execute(db, "INSERT INTO outbox (topic, key, value) VALUES ('" + TOPIC + "', 'order-1',"
                + " convert_to('{\"order\":1}', 'UTF8'))");
        try (SidecarProcess sidecar = SidecarProcess.start(config, dir.resolve("sidecar.log"), port,
                Map.of("CONSOLE_DB_PASSWORD", postgres.password()))) {
            sidecar.awaitHttp("/actuator/health/readiness", "\"UP\"", Duration.ofSeconds(120));
            Await.untilOrFail(() -> Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked") == 1,
                    Duration.ofSeconds(60), () -> "the row is parked; log:\n" + sidecar.log());
            kafka.createTopic(TOPIC, 1);

            long id = Jdbc.queryLong(db, "SELECT id FROM outbox_parked");
            String replay = "/console/outboxes/orders/replay";
            assertThat(sidecar.get("/console", Map.of()).statusCode()).as("no credentials: to the login page")
                    .isEqualTo(302);
            assertThat(sidecar.post(replay, "ids=" + id, Map.of("Content-Type", FORM)).statusCode())
                    .as("a replay with no credentials, no CSRF token").isEqualTo(403);
            // With a valid CSRF token (an anonymous session's, from the login form) but no credentials, a replay is
            // sent to the login page: a refused CSRF token would answer 403, an unprotected path anything but this.
            HttpResponse<String> loginForm = sidecar.get("/login", Map.of());
            Matcher csrfField = Pattern.compile("name=\"_csrf\"[^>]*value=\"([^\"]+)\"").matcher(loginForm.body());
            assertThat(csrfField.find()).as("the login form's CSRF token: %s", loginForm.body()).isTrue();
            HttpResponse<String> anonymous = sidecar.post(replay, "ids=" + id + "&_csrf="
                            + URLEncoder.encode(csrfField.group(1), StandardCharsets.UTF_8),
                    Map.of("Cookie", sessionCookie(loginForm), "Content-Type", FORM));
            assertThat(anonymous.statusCode()).as("a replay with the CSRF token, no credentials: %s",
                    anonymous.body()).isEqualTo(302);
            assertThat(anonymous.headers().firstValue("Location")).as("redirected to")
                    .hasValueSatisfying(l -> assertThat(l).endsWith("/login"));
            assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked WHERE id = " + id))
                    .as("still parked after the unauthenticated replays").isOne();

            WebDriver browser = chromium(dir);
            try {
                String base = "http://127.0.0.1:" + port;
                browser.get(base + "/console");
                Await.untilOrFail(() -> !browser.findElements(By.name("username")).isEmpty(), Duration.ofSeconds(20),
                        () -> "the login form at " + browser.getCurrentUrl() + ":\n" + browser.getPageSource());
                browser.findElement(By.name("username")).sendKeys("operator");
                browser.findElement(By.name("password")).sendKeys(PASSWORD);
                browser.findElement(By.cssSelector("button[type=submit]")).click();
                Await.untilOrFail(() -> browser.getCurrentUrl().endsWith("/console"), Duration.ofSeconds(20),
                        browser::getCurrentUrl);
                find(browser, By.linkText("orders")).click();
                String reason = find(browser, By.cssSelector("#parked td.reason")).getText();
                assertThat(reason).contains(TOPIC).contains("does not exist");
                screenshot(browser);

                // With the session but without the CSRF token, a replay is refused.
                Cookie session = browser.manage().getCookieNamed("JSESSIONID");
                HttpResponse<String> forged = sidecar.post(replay, "ids=" + id,
                        Map.of("Cookie", "JSESSIONID=" + session.getValue(), "Content-Type", FORM));
                assertThat(forged.statusCode()).as("a replay without the CSRF token").isEqualTo(403);
                assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked")).isEqualTo(1);

                find(browser, By.id("select-" + id)).click();
                browser.findElement(By.id("replay")).click();
                assertThat(find(browser, By.id("confirm-replay")).getText()).isEqualTo("Yes, replay");
                assertThat(browser.findElement(By.tagName("h1")).getText())
                        .isEqualTo("Replay 1 parked record(s) of orders?");
                browser.findElement(By.id("confirm-replay")).click();
                assertThat(find(browser, By.id("done")).getText()).isEqualTo("Replayed 1 record(s).");
            } finally {
                browser.quit();
            }
            assertThat(read(kafka.bootstrapServers())).as("the replayed record is published")
                    .extracting(ConsumerRecord::value).containsExactly("{\"order\":1}");
            sidecar.awaitLog("AUDIT 'operator' replayed 1 parked record(s) of outbox 'orders'", Duration.ofSeconds(10));
            assertThat(sidecar.log()).doesNotContain(PASSWORD);
        }
    }

    /** The {@code JSESSIONID=…} cookie {@code response} sets. */
    private static String sessionCookie(HttpResponse<String> response) {
        return response.headers().allValues("Set-Cookie").stream().filter(c -> c.startsWith("JSESSIONID="))
                .map(c -> c.substring(0, c.indexOf(';'))).findFirst()
                .orElseThrow(() -> new AssertionError("no session cookie: " + response.headers()));
    }

    /** The element, once the page that has it is loaded (a click that submits a form returns before). */
    private static WebElement find(WebDriver browser, By by) {
        Await.untilOrFail(() -> !browser.findElements(by).isEmpty(), Duration.ofSeconds(20),
                () -> by + " at " + browser.getCurrentUrl() + ":\n" + browser.getPageSource());
        return browser.findElement(by);
    }

    private static String write(Path file, String content) throws Exception {
        Files.writeString(file, content);
        return file.toString();
    }

    private static WebDriver chromium(Path dir) throws Exception {
        ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM);
        options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--user-data-dir=" + Files.createTempDirectory(dir, "chromium-profile-").toAbsolutePath(),
                "--window-size=1200,700");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER))
                .usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }

    /** The console as the operator sees it, for the README (target/sidecar-console.png). */
    private static void screenshot(WebDriver browser) throws Exception {
        File shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
        Files.copy(shot.toPath(), Path.of("target", "sidecar-console.png"), StandardCopyOption.REPLACE_EXISTING);
    }

    private static List<ConsumerRecord<String, String>> read(String bootstrap) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap), new StringDeserializer(), new StringDeserializer())) {
            TopicPartition p = new TopicPartition(TOPIC, 0);
            c.assign(List.of(p));
            c.seekToBeginning(List.of(p));
            Await.untilOrFail(() -> {
                c.poll(Duration.ofMillis(200)).forEach(records::add);
                return !records.isEmpty();
            }, Duration.ofSeconds(60), () -> "a record on " + TOPIC);
        }
        return records;
    }
}
