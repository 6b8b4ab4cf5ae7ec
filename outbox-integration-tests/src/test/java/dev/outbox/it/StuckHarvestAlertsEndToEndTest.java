package dev.outbox.it;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A row nobody publishes is visible (#42), on real Postgres and Kafka, through the dispatcher's health, the
 * Micrometer meters as Prometheus scrapes them, and the conditions of the shipped alert rules evaluated against that
 * scrape ({@link ShippedAlert}):
 * <ul>
 *   <li>the database stopped under load: the leader leaves LEADER/up within {@link #NOTICE_BOUND} and says since
 *       when, {@code outbox_read_age_seconds} grows, and OutboxHarvestStalled's condition comes true (the lag, sampled
 *       from the database, stands still meanwhile); once the database is back, the leader is up again;</li>
 *   <li>a row committed but never harvested (a negative id, written while the id guard is off, as on a table without
 *       it): the leader stays up and reads on, while {@code outbox_lag_seconds}, measured by the database's clock,
 *       grows and OutboxLagHigh's condition is true.</li>
 * </ul>
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class StuckHarvestAlertsEndToEndTest {
    /**
     * How soon health must leave LEADER/up once the database stops: the first failed read, after the pool's
     * connection timeout at worst (5 s in the scenario's nodes).
     */
    static final Duration NOTICE_BOUND = Duration.ofSeconds(30);
    private static final Duration WAIT = Duration.ofSeconds(90);

    @Test
    void aDatabaseStoppedUnderLoadTakesTheLeaderOutOfUpGrowsTheReadAgeAndFiresOutboxHarvestStalled() throws Exception {
        long seed = Long.getLong("outbox.e2e.seed", System.nanoTime());
        ShippedAlert stalled = ShippedAlert.named("OutboxHarvestStalled");
        try (Scenario s = Scenario.start("stuck_db", seed, InboxSide::new)) {
            s.warmUp();
            Node leader = s.awaitLeader();
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (OutboxMetrics metrics = new OutboxMetrics(leader.dispatcher, "outbox")) {
                metrics.bindTo(registry);
                Scenario.await(() -> stalled.value(registry.scrape()).isPresent(), WAIT,
                        () -> "the read age of the leader " + leader + ": " + leader.dispatcher.health());
                assertThat(leader.dispatcher.health().isUp()).isTrue();
                assertThat(stalled.firesOn(registry.scrape())).as("%s before the outage", stalled).isFalse();

                s.tolerateWriterFailures();
                // One fault for the scenario's accounting (duplicates in flight at it are explained by it): the
                // database stopped, the checks made while it is down, the database started again.
                s.fault("database stopped", () -> {
                    long stopped = System.nanoTime();
                    s.database().stop();
                    try {
                        Scenario.await(() -> !leader.dispatcher.health().isUp(), NOTICE_BOUND,
                                () -> "health leaves LEADER/up: " + leader.dispatcher.health());
                        long noticedMillis = Scenario.millisSince(stopped);
                        DispatcherHealth down = leader.dispatcher.health();
                        assertThat(down.status()).as("leadership is Kafka's: it still leads")
                                .isEqualTo(DispatcherHealth.Status.LEADER);
                        assertThat(down.storeUnreachableSince()).isPresent();
                        double lagAtStop = lag(registry.scrape());
                        double first = stalled.value(registry.scrape()).orElseThrow();
                        Scenario.await(() -> stalled.value(registry.scrape()).orElseThrow() > first + 1, WAIT,
                                () -> "outbox_read_age_seconds grows past " + first + ": " + registry.scrape());
                        Scenario.await(() -> stalled.firesOn(registry.scrape()), WAIT,
                                () -> stalled + " on\n" + registry.scrape());
                        // Unchanged, or still absent (NaN) when the store was already failing at the stop: the lag
                        // never grows from a database that cannot be asked.
                        assertThat(Double.valueOf(lag(registry.scrape()))).as("the lag, sampled from the stopped"
                                + " database, stands still").isEqualTo(Double.valueOf(lagAtStop));
                        s.note("database stopped: health left LEADER/up after " + noticedMillis + " ms; "
                                + stalled.name() + "'s condition true after " + Scenario.millisSince(stopped) + " ms");
                    } finally {
                        s.database().restart();
                    }
                });
                Scenario.await(() -> leader.dispatcher.health().isUp(), WAIT,
                        () -> "up again once the database is back: " + leader.dispatcher.health());
                assertThat(leader.dispatcher.health().storeUnreachableSince()).isEmpty();
                Scenario.await(() -> !stalled.firesOn(registry.scrape()), WAIT,
                        () -> stalled + " stops firing: " + registry.scrape());
            } finally {
                registry.close();
            }
            s.awaitTraffic(1_000);
            s.finish();
        }
    }

    @Test
    void aRowNeverHarvestedGrowsTheLagByTheDatabasesClockAndFiresOutboxLagHigh() throws Exception {
        ShippedAlert lagHigh = ShippedAlert.named("OutboxLagHigh");
        ShippedAlert stalled = ShippedAlert.named("OutboxHarvestStalled");
        JdbcServer pg = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String topic = "stuck-row-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(pg.createDatabase("stuck_row"));
        hc.setUsername(pg.username());
        hc.setPassword(pg.password());
        hc.setMaximumPoolSize(4);
        hc.setPoolName("pool-stuck-row");
        DispatcherConfig config = DispatcherConfig.builder().metricsInterval(Duration.ofMillis(200)).build();
        try (HikariDataSource pool = new HikariDataSource(hc)) {
            PostgresStore store = PostgresStore.builder(pool).table("stuck").build();
            store.createSchema();
            // A writer sets a negative id on a table without the id guard (switched off here; a table of an earlier
            // version, or one whose guard could not be created): the row lies below every cursor. It is dated back
            // ten minutes, as a writer may date create_time, so that the lag is past the rule's bound at once.
            sql(pool, "ALTER TABLE stuck DISABLE TRIGGER outbox_id_guard");
            sql(pool, "INSERT INTO stuck (id, topic, key, value, create_time) VALUES (-1, '" + topic
                    + "', 'stuck', 'x', now() - interval '10 minutes')");
            sql(pool, "ALTER TABLE stuck ENABLE TRIGGER outbox_id_guard");
            List<OutboxMessage> messages = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                messages.add(OutboxMessage.of(topic, "k" + (i % 7), "v" + i));
            }
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, messages);
            }
            KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                    .deliveryTimeout(Duration.ofSeconds(5)).build();
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (Dispatcher d = Dispatcher.builder(store, broker).config(config).name("stuck-row").build();
                 OutboxMetrics metrics = new OutboxMetrics(d, "stuck")) {
                metrics.bindTo(registry);
                d.start();
                Await.untilOrFail(() -> store.backlog() == 1, WAIT, () -> "every row but the stuck one published,"
                        + " backlog " + store.backlog());
                Await.untilOrFail(() -> lagHigh.firesOn(registry.scrape()), WAIT,
                        () -> lagHigh + " on\n" + registry.scrape());
                double first = lagHigh.value(registry.scrape()).orElseThrow();
                assertThat(first).as("the stuck row's age by the database's clock, in seconds")
                        .isBetween(600.0, 900.0);
                Await.untilOrFail(() -> lagHigh.value(registry.scrape()).orElseThrow() >= first + 1, WAIT,
                        () -> "outbox_lag_seconds grows past " + first + ": " + registry.scrape());

                DispatcherHealth h = d.health();
                assertThat(h.isUp()).as("the harvest reads on: it is the row that is stuck").isTrue();
                assertThat(h.lag()).hasValueSatisfying(lag -> assertThat(lag).isGreaterThan(Duration.ofMinutes(10)));
                assertThat(h.sinceLastRead()).hasValueSatisfying(since ->
                        assertThat(since).isLessThan(Duration.ofSeconds(5)));
                assertThat(stalled.firesOn(registry.scrape())).as("%s: the harvest reads", stalled).isFalse();
            } finally {
                registry.close();
            }
        }
    }

    private static double lag(String scrape) {
        return ShippedAlert.named("OutboxLagHigh").value(scrape).orElse(Double.NaN);
    }

    private static void sql(HikariDataSource pool, String statement) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute(statement);
        }
    }
}
