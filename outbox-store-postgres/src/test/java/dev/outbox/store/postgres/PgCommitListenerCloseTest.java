package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.testkit.Await;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Closing the commit listener and then its pool, as an application does at shutdown: the listener has given its
 * connection back before {@code close} returns, so the pool closes without aborting it, and nothing is logged above
 * DEBUG; a connection lost while open is still a WARN. The log lines are read from standard error, where
 * slf4j-simple prints them.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCommitListenerCloseTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static String url;
    private static HikariDataSource admin;

    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    private PrintStream err;

    @BeforeAll
    static void database() {
        url = PostgresTestSupport.database("outbox_listener_close");
        admin = PostgresTestSupport.pool(url, "listener-close-admin", 2);
    }

    @AfterAll
    static void closeAdmin() {
        admin.close();
    }

    @BeforeEach
    void captureStandardError() {
        err = System.err;
        System.setErr(new PrintStream(new TeeStream(err, captured), true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStandardError() {
        System.setErr(err);
    }

    private String log() {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void closingTheListenerThenThePoolLogsNothingAboveDebugFiveTimesInARow() {
        for (int i = 0; i < 5; i++) {
            HikariDataSource pool = PostgresTestSupport.pool(url, "listener-close-" + i, 2);
            AtomicInteger wakeUps = new AtomicInteger();
            PgCommitListener listener = new PgCommitListener(Jdbi.create(pool), "listener_close", wakeUps::incrementAndGet);
            Await.untilOrFail(() -> listener.listening() && wakeUps.get() >= 1, WAIT, () -> "not listening");

            listener.close();
            assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("connections in use after close, round "
                    + i).isZero();
            pool.close();
        }
        assertThat(log()).as("the log of five closes").doesNotContain("WARN").doesNotContain("ERROR")
                .doesNotContain("Exception");
    }

    @Test
    void aConnectionLostWhileOpenIsStillAWarning() {
        HikariDataSource pool = PostgresTestSupport.pool(url, "listener-lost", 2);
        AtomicInteger wakeUps = new AtomicInteger();
        PgCommitListener listener = new PgCommitListener(Jdbi.create(pool), "listener_lost", wakeUps::incrementAndGet);
        try {
            Await.untilOrFail(() -> listener.listening() && wakeUps.get() >= 1, WAIT, () -> "not listening");
            int pid = listener.backendPid();
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT CASE WHEN pg_terminate_backend(" + pid
                    + ") THEN 1 ELSE 0 END")).isEqualTo(1);
            Await.untilOrFail(() -> log().contains("Lost the connection listening for commits on channel listener_lost"),
                    WAIT, this::log);
            assertThat(log()).contains("WARN");
        } finally {
            listener.close();
            pool.close();
        }
    }

    /** Writes to the original stream and to the capture. */
    private static final class TeeStream extends java.io.OutputStream {
        private final PrintStream original;
        private final ByteArrayOutputStream capture;

        TeeStream(PrintStream original, ByteArrayOutputStream capture) {
            this.original = original;
            this.capture = capture;
        }

        @Override
        public void write(int b) {
            original.write(b);
            synchronized (capture) {
                capture.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            original.write(b, off, len);
            synchronized (capture) {
                capture.write(b, off, len);
            }
        }
    }
}
