package dev.outbox.store.mysql;

import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Regression test for the end-to-end suite's "mysql inbox consumer applied 8946 of 8948" after killed connections:
 * {@link KafkaInboxConsumer} on a real Kafka and a real MySQL 8 whose connection is killed at a chosen COMMIT, once
 * just after the server applied it (the reply never reaches the client: its commit outcome is unknown to it) and once
 * just before. Each record's effect must be there exactly once and the consumer must count every record as applied
 * once: the record whose COMMIT had been applied is found in the inbox on retry, and is not a duplicate.
 *
 * <p>The kill is real ({@code KILL} on the server, through {@link JdbcServer#killConnections}); the error the consumer
 * sees is the driver's own, from the dead connection. Only the moment is chosen, by a thin wrapper around the real
 * connections' {@code commit()}.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class MySql8InboxConsumerCommitFailureTest {
    private static final JdbcServer.Kind KIND = JdbcServer.Kind.MYSQL;
    private static final String USER = "inbox_commit_kill";
    private static final int RECORDS = 12;
    /** The commits (counted from 1) to fail: the connection is killed right after the 4th and right before the 8th. */
    private static final int KILL_AFTER = 4;
    private static final int KILL_BEFORE = 8;

    @Test
    void aConnectionKilledDuringCommitLosesNothingAppliesNothingTwiceAndCountsEachRecordOnce() throws Exception {
        KafkaServer kafka = TestServers.kafka();
        String topic = "inbox-commit-kill-" + Long.toHexString(System.nanoTime() & 0xffffff);
        kafka.createTopic(topic, 1);
        JdbcServer server = MySqlTestSupport.server(KIND);
        String url = MySqlTestSupport.database(KIND, "inbox_commit_kill");
        server.createUser(USER, MySqlTestSupport.USER_PASSWORD);
        DataSource real = server.dataSource(url, USER, MySqlTestSupport.USER_PASSWORD);
        MySqlTestSupport.execute(real, "CREATE TABLE effects (message_id CHAR(36) NOT NULL, v VARCHAR(40) NOT NULL)");
        MySqlInbox inbox = MySqlInbox.builder(real).build();
        inbox.createSchema();
        KillingCommits db = new KillingCommits(real, () -> server.killConnections(USER));

        List<String> values = IntStream.range(0, RECORDS).mapToObj(i -> "v" + i).toList();
        AtomicInteger outages = new AtomicInteger();
        try (KafkaInboxConsumer consumer = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                .groupId("inbox-commit-kill").topics(topic).dataSource(db).inbox(inbox)
                .initialBackoff(Duration.ofMillis(20)).maxBackoff(Duration.ofMillis(200))
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500)
                .handler((connection, record, messageId) -> {
                    try (PreparedStatement s = connection.prepareStatement("INSERT INTO effects VALUES (?, ?)")) {
                        s.setString(1, messageId.toString());
                        s.setString(2, new String(record.value(), StandardCharsets.UTF_8));
                        s.executeUpdate();
                    }
                })
                .listener(new KafkaInboxConsumer.Listener() {
                    @Override
                    public void databaseUnavailable(Throwable error) {
                        outages.incrementAndGet();
                    }
                }).build()) {
            consumer.start();
            send(kafka.bootstrapServers(), topic, values);
            Await.untilOrFail(() -> consumer.applied() >= RECORDS || consumer.failure() != null,
                    Duration.ofSeconds(60), () -> "applied " + consumer.applied() + " of " + RECORDS + ", "
                            + consumer.duplicates() + " duplicates, effects " + effects(real));

            assertThat(consumer.failure()).isNull();
            assertThat(db.killedAfter).as("the connection was killed after a COMMIT the server applied").isTrue();
            assertThat(db.killedBefore).as("the connection was killed before a COMMIT").isTrue();
            assertThat(outages.get()).as("the consumer saw both kills").isGreaterThanOrEqualTo(2);
            assertThat(effects(real)).as("one effect per message").hasSize(RECORDS)
                    .allSatisfy((v, n) -> assertThat(n).as(v).isEqualTo(1))
                    .containsOnlyKeys(values);
            assertThat(consumer.applied()).as("each record counted once as applied").isEqualTo(RECORDS);
            assertThat(consumer.duplicates()).as("no delivery was a duplicate").isZero();
            assertThat(consumer.failed()).isZero();
        }
    }

    private static Map<String, Integer> effects(DataSource db) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             var rs = s.executeQuery("SELECT v, count(*) FROM effects GROUP BY v")) {
            Map<String, Integer> counts = new ConcurrentHashMap<>();
            while (rs.next()) {
                counts.put(rs.getString(1), rs.getInt(2));
            }
            return counts;
        } catch (SQLException e) {
            throw new IllegalStateException("reading the effects", e);
        }
    }

    private static void send(String bootstrap, String topic, List<String> values) throws Exception {
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(bootstrap).build()) {
            for (int i = 0; i < values.size(); i++) {
                OutboxRecord r = new OutboxRecord(i + 1, Instant.now(), OutboxMessage.of(topic, "k", values.get(i)),
                        0, null, MessageIds.next());
                broker.send(r).toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A data source of real connections whose {@code commit()} number {@link #KILL_AFTER} runs, then has the
     * connection killed on the server and throws what the driver then throws, and whose commit number
     * {@link #KILL_BEFORE} has the connection killed first. Thread-safe.
     */
    private static final class KillingCommits implements DataSource {
        private final DataSource real;
        private final Runnable kill;
        private final AtomicInteger commits = new AtomicInteger();
        private volatile boolean killedAfter;
        private volatile boolean killedBefore;

        KillingCommits(DataSource real, Runnable kill) {
            this.real = real;
            this.kill = kill;
        }

        @Override
        public Connection getConnection() throws SQLException {
            Connection c = real.getConnection();
            return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                    new Class<?>[]{Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("commit") && method.getParameterCount() == 0) {
                            commit(c);
                            return null;
                        }
                        try {
                            return method.invoke(c, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        private void commit(Connection c) throws SQLException {
            int n = commits.incrementAndGet();
            if (n == KILL_BEFORE) {
                kill.run();
                killedBefore = true;
                c.commit();
                throw new AssertionError("COMMIT succeeded on a killed connection");
            }
            c.commit();
            if (n == KILL_AFTER) {
                kill.run();
                killedAfter = true;
                // The reply of the COMMIT is what got lost: the driver's error from the dead connection stands for it.
                try (Statement s = c.createStatement()) {
                    s.execute("SELECT 1");
                }
                throw new AssertionError("a killed connection still answered");
            }
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            throw new SQLFeatureNotSupportedException("only the configured user");
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws SQLException {
            throw new SQLException("not a wrapper of " + type);
        }

        @Override
        public boolean isWrapperFor(Class<?> type) {
            return false;
        }
    }
}
