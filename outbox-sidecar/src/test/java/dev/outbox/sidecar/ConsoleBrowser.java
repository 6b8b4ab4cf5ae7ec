package dev.outbox.sidecar;

import dev.outbox.testkit.Await;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A headless Chromium on the console (Debian's chromium and chromium-driver, see .ci/run), for the browser tests:
 * signs in, waits for elements of the page a click loads. Not thread-safe.
 */
final class ConsoleBrowser implements AutoCloseable {
    private static final String CHROMIUM = "/usr/bin/chromium";
    private static final String CHROMEDRIVER = "/usr/bin/chromedriver";
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final WebDriver driver;
    private final String base;

    private ConsoleBrowser(WebDriver driver, String base) {
        this.driver = driver;
        this.base = base;
    }

    /** A browser on {@code http://127.0.0.1:<port>}, its profile in a new directory under {@code dir}. */
    static ConsoleBrowser open(Path dir, int port) throws IOException {
        ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM);
        options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--user-data-dir=" + Files.createTempDirectory(dir, "chromium-profile-").toAbsolutePath(),
                "--window-size=1200,700");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER))
                .usingAnyFreePort().build();
        return new ConsoleBrowser(new ChromeDriver(service, options), "http://127.0.0.1:" + port);
    }

    WebDriver driver() {
        return driver;
    }

    /** Opens {@code path} of the sidecar. */
    void get(String path) {
        driver.get(base + path);
    }

    /** Signs in on the console's login form and waits for the overview. */
    void signIn(String user, String password) {
        get("/console");
        find(By.name("username")).sendKeys(user);
        driver.findElement(By.name("password")).sendKeys(password);
        driver.findElement(By.cssSelector("button[type=submit]")).click();
        Await.untilOrFail(() -> driver.getCurrentUrl().endsWith("/console"), WAIT, driver::getCurrentUrl);
    }

    /** The element, once the page that has it is loaded (a click that submits a form returns before). */
    WebElement find(By by) {
        Await.untilOrFail(() -> !driver.findElements(by).isEmpty(), WAIT,
                () -> by + " at " + driver.getCurrentUrl() + ":\n" + driver.getPageSource());
        return driver.findElement(by);
    }

    /** Clicks {@code by} on this page and waits until the next page has {@code next}. */
    WebElement clickThen(By by, By next) {
        WebElement old = driver.findElement(By.tagName("html"));
        driver.findElement(by).click();
        Await.untilOrFail(() -> isStale(old) && !driver.findElements(next).isEmpty(), WAIT,
                () -> next + " after clicking " + by + " at " + driver.getCurrentUrl() + ":\n" + driver.getPageSource());
        return driver.findElement(next);
    }

    private static boolean isStale(WebElement e) {
        try {
            e.isEnabled();
            return false;
        } catch (org.openqa.selenium.StaleElementReferenceException gone) {
            return true;
        }
    }

    @Override
    public void close() {
        driver.quit();
    }
}
