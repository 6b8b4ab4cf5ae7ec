package dev.outbox.it;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * "Not before" end to end: a Postgres store with {@code scheduling(true)}, a real dispatcher and the in-memory broker.
 * Messages delayed by about 2 s are handed to the broker no earlier than their due time by the database's clock (read
 * by the broker as each record arrives), and within a bound after it (the housekeeping thread wakes at the next due
 * time, at least every poll interval); a message without a time of another key goes out at once.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ScheduledDeliveryEndToEndTest {
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Duration BOUND = POLL.plusSeconds(1);
    private static final int DELAYED = 8;

    @Test
    void aDelayedMessageIsSentNotBeforeItsDueTimeByTheDatabaseClockAndSoonAfter() throws Exception {
        JdbcServer pg = TestServers.postgres();
        DataSource db = pg.dataSource(pg.createDatabase("scheduled_e2e"));
        PostgresStore store = PostgresStore.builder(db).table("sched_outbox").scheduling(true).build();
        store.createSchema();
        InMemoryBroker delivered = new InMemoryBroker();
        Map<UUID, Long> sentAtMicros = new ConcurrentHashMap<>();
        try (Connection clock = db.getConnection();
             Dispatcher dispatcher = Dispatcher.builder(store, new DatabaseClockBroker(delivered, clock, sentAtMicros))
                     .config(DispatcherConfig.builder().pollInterval(POLL).build()).name("sched-e2e").build()) {
            dispatcher.start();
            Await.untilOrFail(dispatcher::isLeader, Duration.ofSeconds(30), () -> "leading");
            try (Connection c = db.getConnection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < DELAYED; i++) {
                    store.publisher().publish(c, OutboxMessage.builder("reminders", "r" + i).value("due " + i)
                            .deliverAfter(Duration.ofMillis(2000 + 137L * i)).build());
                }
                store.publisher().publish(c, OutboxMessage.of("reminders", "plain", "now"));
                c.commit();
            }
            Map<UUID, Long> dueMicros = new HashMap<>();
            try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement("SELECT message_id,"
                    + " CAST(EXTRACT(EPOCH FROM due_at) * 1000000 AS bigint) FROM sched_outbox_scheduled");
                 ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    dueMicros.put(rs.getObject(1, UUID.class), rs.getLong(2));
                }
            }
            assertThat(dueMicros).as("still waiting when read back").hasSize(DELAYED);
            assertThat(delivered.awaitDelivered(1, Duration.ofSeconds(30))).isTrue();
            assertThat(delivered.delivered()).extracting(OutboxRecord::key).as("the plain message at once")
                    .containsExactly("plain");

            assertThat(delivered.awaitDelivered(DELAYED + 1, Duration.ofSeconds(60))).isTrue();
            List<Long> lateMicros = new ArrayList<>();
            for (OutboxRecord r : delivered.delivered()) {
                Long due = dueMicros.get(r.messageId());
                if (due == null) {
                    continue;
                }
                long late = sentAtMicros.get(r.messageId()) - due;
                assertThat(late).as("µs from due to the broker's send of %s, by the database's clock", r.key())
                        .isNotNegative().isLessThanOrEqualTo(BOUND.toNanos() / 1000);
                lateMicros.add(late);
            }
            assertThat(lateMicros).hasSize(DELAYED);
            Collections.sort(lateMicros);
            System.out.printf("scheduled delivery, %d messages, pollInterval %d ms: after due p50 %.1f ms, max %.1f"
                    + " ms%n", DELAYED, POLL.toMillis(), lateMicros.get(DELAYED / 2) / 1000.0,
                    lateMicros.get(DELAYED - 1) / 1000.0);
        }
    }

    /** Notes the database's clock when each record reaches the broker, then hands it on. */
    private static final class DatabaseClockBroker implements MessageBroker {
        private final MessageBroker delegate;
        private final Connection clock;
        private final Map<UUID, Long> sentAtMicros;

        DatabaseClockBroker(MessageBroker delegate, Connection clock, Map<UUID, Long> sentAtMicros) {
            this.delegate = delegate;
            this.clock = clock;
            this.sentAtMicros = sentAtMicros;
        }

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            synchronized (clock) {
                try (PreparedStatement s = clock.prepareStatement(
                        "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS bigint)");
                     ResultSet rs = s.executeQuery()) {
                    rs.next();
                    sentAtMicros.put(record.messageId(), rs.getLong(1));
                } catch (SQLException e) {
                    throw new IllegalStateException("reading the database's clock", e);
                }
            }
            return delegate.send(record);
        }

        @Override
        public boolean flush(Duration timeout) {
            return delegate.flush(timeout);
        }

        @Override
        public void close(Duration timeout) {
            delegate.close(timeout);
        }
    }
}
