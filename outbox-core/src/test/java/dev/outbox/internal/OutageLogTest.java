package dev.outbox.internal;

import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import static org.assertj.core.api.Assertions.assertThat;

/** However long an outage lasts, its log is a start, a summary a minute, and an end. */
class OutageLogTest {
    private long now;
    private final List<String> lines = new ArrayList<>();
    private final OutageLog log = new OutageLog(
            (level, message, error) -> lines.add(level + (error == null ? " " : " [stack] ") + message),
            "outbox", "read", new EngineRuntime() {
                @Override
                public long nanoTime() {
                    return now;
                }

                @Override
                public Clock clock() {
                    return Clock.systemUTC();
                }

                @Override
                public double random() {
                    return 0.5;
                }

                @Override
                public UUID randomUuid() {
                    return UUID.randomUUID();
                }

                @Override
                public Worker start(String name, Runnable body) {
                    throw new UnsupportedOperationException("no workers in this test");
                }

                @Override
                public Lock newLock() {
                    return new ReentrantLock();
                }
            });

    @Test
    void anHourLongOutageLogsItsStartASummaryAMinuteAndItsEnd() {
        Duration retry = Duration.ofSeconds(10);
        for (int i = 0; i < 360; i++) { // an hour of failures, one every 10 s
            log.failed(retry, new IllegalStateException("connection refused"));
            now += TimeUnit.SECONDS.toNanos(10);
        }
        log.succeeded();
        log.succeeded();

        List<String> warnOrInfo = lines.stream().filter(l -> !l.startsWith("DEBUG")).toList();
        assertThat(warnOrInfo.get(0)).isEqualTo("WARN [stack] outbox: read failed; retrying in PT10S (while it keeps"
                + " failing, a line sums the failures up once a minute)");
        assertThat(warnOrInfo.subList(1, warnOrInfo.size() - 1)).as("one summary a minute, without a stack trace")
                .hasSize(59).allSatisfy(l -> assertThat(l).startsWith("WARN outbox: read still failing: ")
                        .contains("; the last: IllegalStateException: connection refused; retrying in PT10S"));
        assertThat(warnOrInfo.get(1)).isEqualTo("WARN outbox: read still failing: 7 failures in PT1M; the last:"
                + " IllegalStateException: connection refused; retrying in PT10S");
        assertThat(warnOrInfo.get(warnOrInfo.size() - 1))
                .isEqualTo("INFO outbox: read works again after 360 failure(s) in PT1H");
        assertThat(lines).as("every other failure at DEBUG, with its stack trace").filteredOn(l -> l.startsWith("DEBUG"))
                .hasSize(359).allSatisfy(l -> assertThat(l).startsWith("DEBUG [stack] outbox: read failed again"));
        assertThat(log.failures()).isZero();
    }

    @Test
    void aSuccessWithoutAFailureLogsNothingAndTheNextOutageStartsAfresh() {
        log.succeeded();
        assertThat(lines).isEmpty();

        log.failed(Duration.ofMillis(500), new IllegalStateException("first"));
        log.succeeded();
        now += TimeUnit.SECONDS.toNanos(5);
        log.failed(Duration.ofMillis(500), new IllegalStateException("second"));

        assertThat(lines).containsExactly(
                "WARN [stack] outbox: read failed; retrying in PT0.5S (while it keeps failing, a line sums the failures"
                        + " up once a minute)",
                "INFO outbox: read works again after 1 failure(s) in PT0S",
                "WARN [stack] outbox: read failed; retrying in PT0.5S (while it keeps failing, a line sums the failures"
                        + " up once a minute)");
    }
}
