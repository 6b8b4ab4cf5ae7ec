package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherListener;
import dev.outbox.ParkedRecord;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.spi.LeaderTransport;
import dev.outbox.store.sql.SqlLeaderTransport;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.JdbcServer;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One harvesting "process" of a scenario: its own connection pool (the dispatchers' database user, and an
 * {@code ApplicationName} of its own), a {@code PostgresStore} (harvesting its table, or streaming the scenario's
 * replication slot over a replication connection with the same user and {@code ApplicationName}), a
 * {@code MessageBroker} from the scenario's {@link DataBroker} ({@code KafkaMessageBroker} on the reference path), a
 * {@code KafkaLeaderTransport} in the scenario's leader group (or a
 * {@code SqlLeaderTransport} on the outbox's lease table, per {@link Settings#election()}), and the {@link Dispatcher}
 * over them. Each adapter is wrapped ({@link NodeStore}, {@link NodeBroker},
 * {@link NodeTransport}) to log what it does and to {@linkplain #crash crash} like a killed process.
 */
final class Node implements AutoCloseable {
    final String name;
    /** The {@code ApplicationName} of this node's database sessions, to kill them alone. */
    final String client;
    final NodeStore store;
    final NodeBroker broker;
    final Dispatcher dispatcher;
    final List<ParkedRecord> parked = new CopyOnWriteArrayList<>();
    final AtomicInteger failures = new AtomicInteger();
    private final HikariDataSource pool;
    private final NodeTransport transport;
    private volatile boolean crashed;

    Node(String name, String client, Settings settings, SendLog log, LeadershipTimeline timeline) {
        this.name = name;
        this.client = client;
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(settings.jdbcUrl() + (settings.jdbcUrl().contains("?") ? "&" : "?") + "ApplicationName="
                + client);
        hc.setUsername(settings.dbUser());
        hc.setPassword(settings.dbPassword());
        hc.setMaximumPoolSize(4);
        hc.setMinimumIdle(0);
        hc.setConnectionTimeout(5_000);
        hc.setPoolName("pool-" + client);
        this.pool = new HikariDataSource(hc);
        PostgresStore.Builder storeBuilder = PostgresStore.builder(pool).statementTimeout(Duration.ofSeconds(5));
        if (settings.walHarvest()) {
            // The replication connection carries the node's ApplicationName too, so that killing the node's sessions
            // (a crash, killConnections) terminates its WAL sender with them.
            storeBuilder.walHarvest(WalHarvest.builder(settings.jdbcUrl())
                    .user(settings.dbUser())
                    .password(settings.dbPassword())
                    .property("ApplicationName", client)
                    .takeoverTimeout(Scenario.WAL_TAKEOVER_TIMEOUT)
                    .build());
        }
        PostgresStore pg = storeBuilder.build();
        this.store = new NodeStore(name, pg, log);
        this.broker = new NodeBroker(name, settings.broker().newBroker(client, settings.deliveryTimeout(),
                Scenario.MAX_MESSAGE_BYTES), log);
        LeaderTransport election = settings.election() == Scenario.Election.DATABASE
                // The lease on the node's own pool: killing the node's sessions kills its renewals' too.
                ? SqlLeaderTransport.builder(pg)
                        .dispatcherConfig(settings.config())
                        .deliveryTimeout(settings.deliveryTimeout())
                        .leaseDuration(settings.sessionTimeout())
                        .renewInterval(Duration.ofMillis(400))
                        .acquireInterval(Duration.ofMillis(200))
                        .build()
                : KafkaLeaderTransport.builder().bootstrapServers(settings.broker().kafkaBootstrap())
                        .topic(settings.leaderTopic())
                        .dispatcherConfig(settings.config())
                        .deliveryTimeout(settings.deliveryTimeout())
                        .consumerProperty("session.timeout.ms", (int) settings.sessionTimeout().toMillis())
                        .consumerProperty("max.poll.interval.ms", (int) settings.sessionTimeout().toMillis())
                        .consumerProperty("client.id", client + "-leader")
                        .build();
        this.transport = new NodeTransport(election);
        DispatcherListener leadership = timeline.listener(name);
        this.dispatcher = Dispatcher.builder(store, broker)
                .leaderTransport(transport)
                .config(settings.config())
                .name(name)
                .listener(new DispatcherListener() {
                    @Override
                    public void leaderAcquired(UUID leaderId) {
                        leadership.leaderAcquired(leaderId);
                    }

                    @Override
                    public void leaderRefreshed(UUID leaderId) {
                        leadership.leaderRefreshed(leaderId);
                    }

                    @Override
                    public void leaderRevoked() {
                        leadership.leaderRevoked();
                    }

                    @Override
                    public void leaderFenced() {
                        leadership.leaderFenced();
                    }

                    @Override
                    public void recordParked(ParkedRecord record) {
                        parked.add(record);
                    }

                    @Override
                    public void failure(String operation, Throwable error) {
                        failures.incrementAndGet();
                    }
                })
                .build();
    }

    void start() {
        dispatcher.start();
    }

    boolean isLeader() {
        return !crashed && dispatcher.isLeader();
    }

    boolean crashed() {
        return crashed;
    }

    /**
     * Dies like a killed process, all at once: no more sends (the producer is closed without flushing), no more
     * database calls (and the node's sessions are killed, rolling back whatever they had open), and the leader
     * group consumer is never polled again, so the group drops the member only when its poll interval runs out
     * — no orderly revocation, no drain.
     */
    void crash(JdbcServer database) {
        crashed = true;
        store.cut();
        transport.freeze();
        broker.crash();
        database.killConnections(client);
    }

    @Override
    public void close() {
        try {
            dispatcher.close();
        } finally {
            pool.close();
        }
    }

    @Override
    public String toString() {
        return name + (crashed ? "(crashed)" : isLeader() ? "(leader)" : "");
    }
}
