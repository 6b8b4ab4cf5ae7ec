package dev.outbox.store.mysql;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.StoreException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.BrokerFaults;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The MySQL 8 or MariaDB server (the subclasses) itself fails under a running dispatcher harvest (the real server of outbox-test-servers, the
 * in-memory broker), while a writer keeps committing: it is killed (SIGKILL, crash recovery) and started again on
 * the same port and data; made read-only ({@code super_read_only} on MySQL, {@code read_only} on MariaDB, sessions cut: a
 * fail-over to a node that refuses writes, errors 1290/1836) and writable again; frozen (SIGSTOP) for longer than the store's statement timeout
 * (the store's network timeout, twice the statement timeout, ends each call), then let run on (SIGCONT). Each fault
 * lasts until the dispatcher has reported a failure, so that it really hit it. Afterwards every message whose commit
 * returned is delivered (G1), per key never an older record after a newer one (G2), nothing is parked, and how
 * long purging took to resume after each fault ended is printed and bounded. Every store failure the dispatcher
 * reports is retriable (the server's error codes are classified as an outage, never as a refusal for good); the
 * codes seen are printed. Three faults in one test and one
 * server for the class keep the build lean. (Postgres has the same three faults in the end-to-end suite,
 * {@code DatabaseOutageEndToEndTest}.)
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
abstract class MySqlServerFaultsTests {
    private static final Logger log = LoggerFactory.getLogger(MySqlServerFaultsTests.class);
    /** The dispatcher's backoff (at most 500 ms), a new connection and a read: measured well under 2 s. */
    private static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int KEYS = 8;

    abstract JdbcServer.Kind kind();

    @Test
    void stoppedReadOnlyAndPausedUnderAHarvestLosesNothingAndKeepsKeyOrder() throws Exception {
        JdbcServer.Kind kind = kind();
        JdbcServer server = MySqlTestSupport.server(kind);
        String url = MySqlTestSupport.database(kind, "outbox_server_faults");
        InMemoryBroker broker = InMemoryBroker.builder().faults(BrokerFaults.random(1)
                .delayAcks(Duration.ofMillis(2)).build()).build();
        AtomicInteger failures = new AtomicInteger();
        Set<String> codes = ConcurrentHashMap.newKeySet();
        List<String> refusals = new CopyOnWriteArrayList<>();
        DispatcherConfig config = DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(20))
                .markBackoff(Duration.ofMillis(2))
                .ioErrorBackoff(Duration.ofMillis(50))
                .maxIoErrorBackoff(Duration.ofMillis(500))
                .drainTimeout(Duration.ofSeconds(2))
                .build();
        Writer writer;
        List<String> notes = new ArrayList<>();
        try (HikariDataSource appPool = MySqlTestSupport.pool(kind, url, "faults_app", 2,
                c -> c.setConnectionTimeout(2_000));
             HikariDataSource storePool = MySqlTestSupport.pool(kind, url, "faults_store", 3,
                     c -> c.setConnectionTimeout(2_000))) {
            MySqlStore appStore = MySqlStore.builder(appPool).statementTimeout(Duration.ofSeconds(1)).build();
            appStore.createSchema();
            MySqlStore store = MySqlStore.builder(storePool).statementTimeout(Duration.ofSeconds(1)).build();
            writer = new Writer(appPool, appStore);
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("mysql-faults")
                    .listener(new DispatcherListener() {
                        @Override
                        public void failure(String operation, Throwable error) {
                            if (error instanceof StoreException e) {
                                codes.add(errorCode(e));
                                if (!e.isRetriable()) {
                                    refusals.add(operation + ": " + e.getMessage());
                                }
                            }
                            failures.incrementAndGet();
                        }
                    }).build()) {
                dispatcher.start();
                writer.start();
                try {
                    awaitTraffic(dispatcher, writer);
                    notes.add(outage("server killed and restarted", dispatcher, writer, failures, server::stop,
                            server::restart));
                    notes.add(outage("server read-only", dispatcher, writer, failures, () -> server.readOnly(true),
                            () -> server.readOnly(false)));
                    notes.add(outage("server paused (SIGSTOP) past the statement timeout", dispatcher, writer,
                            failures, server::pause, server::resume));
                } finally {
                    server.resume();
                    server.readOnly(false);
                    writer.stop();
                }
                Await.untilOrFail(() -> store.backlog() == 0 && dispatcher.inFlightRecords() == 0, WAIT,
                        () -> "backlog " + store.backlog() + ", " + dispatcher.health());
            }
        }

        // G1: every message whose commit returned was delivered; G2: per key, never an older one after a newer one.
        Map<String, Integer> last = new HashMap<>();
        Set<String> distinct = new HashSet<>();
        int violations = 0;
        for (OutboxRecord r : broker.delivered()) {
            String v = new String(r.message().value(), StandardCharsets.UTF_8);
            distinct.add(v);
            int seq = Integer.parseInt(v.substring(v.indexOf('#') + 1));
            Integer before = last.put(r.key(), seq);
            if (before != null && before > seq) {
                violations++;
            }
        }
        Set<String> lost = new HashSet<>(writer.confirmed);
        lost.removeAll(distinct);
        int duplicates = broker.delivered().size() - distinct.size();
        String summary = String.format("%s %s server faults: %d messages confirmed (%d commits failed), %d delivered,"
                        + " lost %d, per-key order violations %d, duplicates %d; store error codes seen %s; %s", kind,
                server.version(), writer.confirmed.size(), writer.failedCommits.get(), broker.delivered().size(),
                lost.size(), violations, duplicates, new TreeSet<>(codes), String.join("; ", notes));
        log.info(summary);
        System.out.println(summary);
        assertThat(refusals).as("store failures classified as not retriable").isEmpty();
        assertThat(lost).as("G1: every confirmed message delivered").isEmpty();
        assertThat(violations).as("G2: per-key order").isZero();
        assertThat(broker.delivered()).as("nothing but the outbox's messages").allSatisfy(r ->
                assertThat(r.key()).startsWith("key-"));
    }

    /** The first vendor error code in {@code e}'s causes, or the innermost cause's class if there is none. */
    private static String errorCode(StoreException e) {
        Throwable innermost = e;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && sql.getErrorCode() != 0) {
                return String.valueOf(sql.getErrorCode());
            }
            innermost = t;
        }
        return innermost.getClass().getSimpleName();
    }

    /** Lets the dispatcher deliver and purge a little, so that the next fault hits a harvest under way. */
    private static void awaitTraffic(Dispatcher dispatcher, Writer writer) {
        long confirmed = writer.confirmedCount.get();
        Instant since = Instant.now();
        Await.untilOrFail(() -> writer.confirmedCount.get() > confirmed + 5 * KEYS
                        && dispatcher.health().lastPurge().filter(p -> p.isAfter(since)).isPresent(), WAIT,
                () -> "traffic: confirmed " + writer.confirmedCount + ", " + dispatcher.health());
    }

    /**
     * One fault: {@code begin}, held until the dispatcher has failed on it, then {@code end}; returns a note with how
     * long purging took to resume after it ended, which it bounds.
     */
    private static String outage(String what, Dispatcher dispatcher, Writer writer, AtomicInteger failures,
                                 Runnable begin, Runnable end) {
        int before = failures.get();
        long t0 = System.nanoTime();
        long noticed;
        try {
            begin.run();
            Await.untilOrFail(() -> failures.get() > before, WAIT, () -> "a dispatcher failure after '" + what + "'");
            noticed = (System.nanoTime() - t0) / 1_000_000;
        } finally {
            end.run();
        }
        Instant ended = Instant.now();
        long t1 = System.nanoTime();
        Await.untilOrFail(() -> dispatcher.health().lastPurge().filter(p -> p.isAfter(ended)).isPresent(), WAIT,
                () -> "purging again after '" + what + "' ended: " + dispatcher.health());
        long recovered = (System.nanoTime() - t1) / 1_000_000;
        assertThat(Duration.ofMillis(recovered)).as("purging resumed after '%s'", what)
                .isLessThanOrEqualTo(RECOVERY_BOUND);
        awaitTraffic(dispatcher, writer);
        return String.format("%s: the dispatcher failed on it after %d ms, purging again %d ms after it ended", what,
                noticed, recovered);
    }

    /**
     * Commits one message per key every few milliseconds, each key's values numbered in order; remembers the messages
     * whose commit returned. A failed commit (the server is down, read-only or frozen) may or may not have committed:
     * its messages are not expected, but their numbers are used up, so that the order check stays exact.
     */
    private static final class Writer implements Runnable {
        private final HikariDataSource pool;
        private final MySqlStore store;
        final Set<String> confirmed = ConcurrentHashMap.newKeySet();
        final AtomicLong confirmedCount = new AtomicLong();
        final AtomicInteger failedCommits = new AtomicInteger();
        private volatile boolean running = true;
        private Thread thread;

        Writer(HikariDataSource pool, MySqlStore store) {
            this.pool = pool;
            this.store = store;
        }

        void start() {
            thread = new Thread(this, "mysql-faults-writer");
            thread.setDaemon(true);
            thread.start();
        }

        void stop() throws InterruptedException {
            running = false;
            thread.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(thread.isAlive()).as("the writer stopped").isFalse();
        }

        @Override
        public void run() {
            for (int seq = 0; running; seq++) {
                List<OutboxMessage> batch = new ArrayList<>();
                for (int k = 0; k < KEYS; k++) {
                    batch.add(OutboxMessage.of("orders", "key-" + k, "key-" + k + "#" + seq));
                }
                try (Connection c = pool.getConnection()) {
                    c.setAutoCommit(false);
                    store.publisher().publish(c, batch);
                    c.commit();
                    for (OutboxMessage m : batch) {
                        confirmed.add(new String(m.value(), StandardCharsets.UTF_8));
                    }
                    confirmedCount.addAndGet(batch.size());
                } catch (Exception e) {
                    failedCommits.incrementAndGet();
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5)); // pacing the load, not waiting for anything
            }
        }
    }
}
