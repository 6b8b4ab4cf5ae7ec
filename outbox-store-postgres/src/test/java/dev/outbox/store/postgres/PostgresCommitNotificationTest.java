package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Commit wake-ups on the real Postgres server ({@link PostgresStore.Builder#commitNotifications}): the publisher's
 * {@code pg_notify} and the optional trigger wake the listener at commit, the listener survives its connection
 * being terminated, closing it gives the connection back un-listened, and a dispatcher polling only every 30 s
 * still publishes a row committed while it was idle.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class PostgresCommitNotificationTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static HikariDataSource pool;
    private static HikariDataSource appPool;

    @BeforeAll
    static void start() {
        String url = PostgresTestSupport.database("outbox_notify");
        pool = PostgresTestSupport.pool(url, "notify-store", 4);
        appPool = PostgresTestSupport.pool(url, "notify-app", 2);
    }

    @AfterAll
    static void stop() {
        pool.close();
        appPool.close();
    }

    @Test
    void aCommitWakesTheListenerAndSoDoesItsReconnection() throws Exception {
        PostgresStore store = PostgresStore.builder(pool).table("notified").build();
        store.createSchema();
        assertThat(store.notifyChannel()).contains("notified");
        AtomicInteger wakeUps = new AtomicInteger();
        dev.outbox.spi.CommitSignals.CommitWatch watch = store.watchCommits(wakeUps::incrementAndGet);
        int listener;
        try {
            Await.untilOrFail(() -> watch.listening() && wakeUps.get() >= 1, WAIT,
                    () -> "not listening; wake-ups " + wakeUps.get());
            int before = wakeUps.get();
            commit(store, List.of(OutboxMessage.of("orders", "k", "v1"), OutboxMessage.of("orders", "k", "v2")));
            Await.untilOrFail(() -> wakeUps.get() > before, WAIT, () -> "no wake-up after a commit");

            // Not needed (the dispatcher is busy): it stops listening; needed again, it listens and wakes once.
            watch.needed(false);
            int busyPid = listener(watch).backendPid();
            Await.untilOrFail(() -> PostgresTestSupport.queryLong(appPool, "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE pid = " + busyPid + " AND query = 'UNLISTEN \"notified\"'") == 1, WAIT,
                    () -> "still listening while not needed");
            assertThat(watch.listening()).as("connected, ready to listen again").isTrue();
            int whileBusy = wakeUps.get();
            watch.needed(true);
            Await.untilOrFail(() -> wakeUps.get() > whileBusy, WAIT, () -> "no wake-up on listening again");
            int relistened = wakeUps.get();
            commit(store, List.of(OutboxMessage.of("orders", "k", "v2b")));
            Await.untilOrFail(() -> wakeUps.get() > relistened, WAIT, () -> "no wake-up after listening again");

            // The listening connection is terminated: the listener opens another and wakes the harvest once, for
            // what it may not have heard meanwhile; commits wake it again afterwards.
            int pid = listener(watch).backendPid();
            long killed = PostgresTestSupport.queryLong(appPool, "SELECT CASE WHEN pg_terminate_backend(" + pid
                    + ") THEN 1 ELSE 0 END");
            assertThat(killed).as("the listening backend, pid " + pid).isEqualTo(1);
            Await.untilOrFail(() -> !watch.listening(), WAIT, () -> "never noticed the terminated connection");
            Await.untilOrFail(watch::listening, WAIT, () -> "not listening again");
            int afterReconnect = wakeUps.get();
            commit(store, List.of(OutboxMessage.of("orders", "k", "v3")));
            Await.untilOrFail(() -> wakeUps.get() > afterReconnect, WAIT, () -> "no wake-up after reconnecting");
            listener = listener(watch).backendPid();
        } finally {
            watch.close();
        }
        Await.untilOrFail(() -> PostgresTestSupport.queryLong(appPool, "SELECT count(*) FROM pg_stat_activity"
                        + " WHERE pid = " + listener + " AND query = 'UNLISTEN \"notified\"'") == 1,
                WAIT, () -> "the connection went back to the pool still listening");
    }

    @Test
    void aPublisherInThisProcessWakesTheWatchAtOnceWithoutTheNotification() {
        PostgresStore store = PostgresStore.builder(pool).table("notified_local").build();
        store.createSchema();
        AtomicInteger wakeUps = new AtomicInteger();
        try (dev.outbox.spi.CommitSignals.CommitWatch watch = store.watchCommits(wakeUps::incrementAndGet)) {
            Await.untilOrFail(() -> watch.listening() && wakeUps.get() >= 1, WAIT, () -> "not listening");
            watch.needed(false); // the listener stops listening: only the local wake-up is left
            int before = wakeUps.get();
            store.publisher().committed();
            assertThat(wakeUps.get()).as("woken on the caller's thread, before any notification").isEqualTo(before + 1);
        }
        int closed = wakeUps.get();
        store.publisher().committed();
        assertThat(wakeUps.get()).as("nothing after the watch closed").isEqualTo(closed);
    }

    @Test
    void theTriggerWakesTheListenerForPlainSqlWriters() throws Exception {
        PostgresStore store = PostgresStore.builder(pool).table("notified_sql").build();
        store.createSchema();
        PostgresTestSupport.execute(appPool, store.notifyTriggerSql());
        PostgresTestSupport.execute(appPool, store.notifyTriggerSql()); // idempotent
        AtomicInteger wakeUps = new AtomicInteger();
        try (dev.outbox.spi.CommitSignals.CommitWatch watch = store.watchCommits(wakeUps::incrementAndGet)) {
            Await.untilOrFail(() -> watch.listening() && wakeUps.get() >= 1, WAIT, () -> "not listening");
            int before = wakeUps.get();
            PostgresTestSupport.execute(appPool, "INSERT INTO notified_sql (topic, key, value)"
                    + " VALUES ('orders', 'k', 'plain'::bytea)");
            Await.untilOrFail(() -> wakeUps.get() > before, WAIT, () -> "no wake-up after a plain INSERT");
        }
    }

    @Test
    void offMeansNoNotificationAndNoTriggerAndOnlyLocalWakeUps() {
        PostgresStore store = PostgresStore.builder(pool).table("unnotified").commitNotifications(false).build();
        assertThat(store.notifyChannel()).isEmpty();
        dev.outbox.spi.CommitSignals.CommitWatch local = store.watchCommits(() -> { });
        assertThat(local).as("this process's publishers only").isNotNull().isNotInstanceOf(PgCommitListener.class);
        local.close();
        assertThat(local.listening()).isFalse();
        assertThatThrownBy(store::notifyTriggerSql).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("commitNotifications");
        assertThat(PgCommitListener.channel("s".repeat(40), "t".repeat(40))).hasSize(63);
    }

    @Test
    void aDispatcherPollingEvery30SecondsPublishesARowCommittedWhileIdle() throws Exception {
        PostgresStore store = PostgresStore.builder(pool).table("notified_idle").build();
        store.createSchema();
        InMemoryBroker broker = new InMemoryBroker();
        DispatcherConfig config = DispatcherConfig.builder()
                .pollInterval(Duration.ofSeconds(30))
                .markBackoff(Duration.ofSeconds(30)) // an empty read waits 30 s, unless woken
                .heartbeatTimeout(Duration.ofMinutes(2))
                .rescanInterval(Duration.ofHours(1))
                .drainTimeout(Duration.ofSeconds(2))
                .build();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("notified").build()) {
            dispatcher.start();
            Await.untilOrFail(() -> dispatcher.health().status() == DispatcherHealth.Status.LEADER
                    && dispatcher.health().lastMark().isPresent(), WAIT, () -> "not leading: " + dispatcher.health());
            commit(store, List.of(OutboxMessage.of("orders", "k", "after idle")));
            assertThat(broker.awaitDelivered(1, Duration.ofSeconds(15))).as("delivered before the next poll").isTrue();
            commit(store, List.of(OutboxMessage.of("orders", "k", "and again")));
            assertThat(broker.awaitDelivered(2, Duration.ofSeconds(15))).isTrue();
        }
    }

    private static PgCommitListener listener(dev.outbox.spi.CommitSignals.CommitWatch watch) {
        return (PgCommitListener) ((PgNotifications.LocalAndListening) watch).listener;
    }

    private static void commit(PostgresStore store, List<OutboxMessage> messages) throws Exception {
        try (Connection c = appPool.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, messages);
            c.commit();
        }
    }
}
