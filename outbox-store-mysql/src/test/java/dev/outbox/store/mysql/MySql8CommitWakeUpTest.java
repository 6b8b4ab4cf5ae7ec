package dev.outbox.store.mysql;

import dev.outbox.spi.CommitSignals;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MySQL cannot notify: a publisher in the leader's process wakes it instead ({@code Publisher.committed()}), so a
 * dispatcher polling only every 30 s publishes a row committed while it was idle, at once; a watch closed hears
 * nothing more.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class MySql8CommitWakeUpTest {
    private static final JdbcServer.Kind KIND = JdbcServer.Kind.MYSQL;
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void aCommittedCallWakesAnIdleLeaderInTheSameProcess() throws Exception {
        String url = MySqlTestSupport.database(KIND, "outbox_wake_up");
        try (HikariDataSource pool = MySqlTestSupport.pool(KIND, url, "wake_up", 4)) {
            MySqlStore store = MySqlStore.builder(pool).build();
            store.createSchema();

            AtomicInteger wakeUps = new AtomicInteger();
            CommitSignals.CommitWatch watch = store.watchCommits(wakeUps::incrementAndGet);
            assertThat(watch.listening()).isTrue();
            store.publisher().committed();
            assertThat(wakeUps).hasValue(1);
            watch.close();
            assertThat(watch.listening()).isFalse();
            store.publisher().committed();
            assertThat(wakeUps).as("closed: no more wake-ups").hasValue(1);

            InMemoryBroker broker = new InMemoryBroker();
            DispatcherConfig config = DispatcherConfig.builder()
                    .pollInterval(Duration.ofSeconds(30))
                    .markBackoff(Duration.ofSeconds(30)) // an empty read waits 30 s, unless woken
                    .heartbeatTimeout(Duration.ofMinutes(2))
                    .rescanInterval(Duration.ofHours(1))
                    .drainTimeout(Duration.ofSeconds(2))
                    .build();
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("woken").build()) {
                dispatcher.start();
                Await.untilOrFail(() -> dispatcher.health().status() == DispatcherHealth.Status.LEADER
                        && dispatcher.health().lastMark().isPresent(), WAIT, () -> "not leading: " + dispatcher.health());
                for (int i = 1; i <= 2; i++) {
                    try (Connection c = pool.getConnection()) {
                        c.setAutoCommit(false);
                        store.publisher().publish(c, OutboxMessage.of("orders", "k", "after idle #" + i));
                        c.commit();
                    }
                    store.publisher().committed();
                    assertThat(broker.awaitDelivered(i, Duration.ofSeconds(15))).as("delivered before the next poll")
                            .isTrue();
                }
            }
        }
    }
}
