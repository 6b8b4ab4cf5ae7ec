package dev.outbox.it;

import dev.outbox.Inbox;
import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.store.mysql.MySqlInbox;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The consumers' side of a scenario: three {@link KafkaInboxConsumer}s read the data topic, each in its own consumer
 * group and its own database — one on Postgres (a database apart from the outbox's), one on MySQL 8, one on
 * MariaDB — and apply each
 * message's effect as a row of {@code e2e_effects(message_id, k, seq, token)}, which has no unique key, so that an
 * effect applied twice would show as two rows. {@link #check} asserts exactly one row per committed message in each.
 * Not thread-safe: the scenario's thread drives it.
 */
final class InboxSide implements Scenario.Inboxes {
    /**
     * The clients whose database connections a test may kill: the Postgres application name, the MySQL and MariaDB
     * user.
     */
    static final String CLIENT = "e2e_inbox";
    private static final String PASSWORD = "inbox";
    private static final String EFFECTS_DDL = "CREATE TABLE e2e_effects (message_id CHAR(36) NOT NULL,"
            + " k VARCHAR(100) NOT NULL, seq INT NOT NULL, token VARCHAR(100) NOT NULL)";

    /** One consumer and its database. */
    private record Side(String name, JdbcServer server, DataSource db, KafkaInboxConsumer consumer) {
    }

    private final List<Side> sides = new ArrayList<>();

    InboxSide(String scenario, String bootstrap, String topic) {
        JdbcServer pg = TestServers.postgres();
        String pgUrl = pg.createDatabase("e2e_" + scenario + "_inbox");
        DataSource pgDb = pg.dataSource(pgUrl + (pgUrl.contains("?") ? "&" : "?") + "ApplicationName=" + CLIENT);
        execute(pgDb, EFFECTS_DDL);
        PostgresInbox pgInbox = PostgresInbox.builder(pgDb).statementTimeout(Duration.ofSeconds(5)).build();
        pgInbox.createSchema();
        sides.add(new Side("postgres", pg, pgDb, consumer(bootstrap, topic, scenario + "-pg", pgDb, pgInbox)));

        // The first scenario of the JVM starts MySQL and MariaDB: both at once, not one after the other.
        CompletableFuture<JdbcServer> mariadb = new CompletableFuture<>();
        Thread starter = new Thread(() -> {
            try {
                mariadb.complete(TestServers.mariadb());
            } catch (Throwable e) {
                mariadb.completeExceptionally(e);
            }
        }, "e2e-start-mariadb");
        starter.start();
        for (JdbcServer.Kind kind : List.of(JdbcServer.Kind.MYSQL, JdbcServer.Kind.MARIADB)) {
            String name = kind == JdbcServer.Kind.MYSQL ? "mysql" : "mariadb";
            JdbcServer server = kind == JdbcServer.Kind.MYSQL ? TestServers.mysql() : started(mariadb);
            String url = server.createDatabase("e2e_" + scenario + "_inbox");
            server.createUser(CLIENT, PASSWORD);
            DataSource db = server.dataSource(url, CLIENT, PASSWORD);
            execute(db, EFFECTS_DDL);
            MySqlInbox inbox = MySqlInbox.builder(db).statementTimeout(Duration.ofSeconds(5)).build();
            inbox.createSchema();
            sides.add(new Side(name, server, db, consumer(bootstrap, topic, scenario + "-" + name, db, inbox)));
        }
    }

    private static JdbcServer started(CompletableFuture<JdbcServer> server) {
        try {
            return server.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        }
    }

    private static KafkaInboxConsumer consumer(String bootstrap, String topic, String group, DataSource db,
                                               Inbox inbox) {
        return KafkaInboxConsumer.builder().bootstrapServers(bootstrap).groupId("e2e-inbox-" + group).topics(topic)
                .dataSource(db).inbox(inbox)
                .initialBackoff(Duration.ofMillis(20)).maxBackoff(Duration.ofMillis(500))
                .property("session.timeout.ms", 6000).property("heartbeat.interval.ms", 500)
                .handler((connection, record, messageId) -> {
                    int seq = Values.seqOf(record.value());
                    String token = Values.tokenOf(record.value());
                    if (seq < 0 || token == null) {
                        throw new IllegalArgumentException("not a writer's value: " + record.key());
                    }
                    try (PreparedStatement s = connection.prepareStatement("INSERT INTO e2e_effects"
                            + " (message_id, k, seq, token) VALUES (?, ?, ?, ?)")) {
                        s.setString(1, messageId.toString());
                        s.setString(2, record.key());
                        s.setInt(3, seq);
                        s.setString(4, token);
                        s.executeUpdate();
                    }
                }).build();
    }

    @Override
    public void start() {
        sides.forEach(s -> s.consumer().start());
    }

    /** Kills the consumers' database connections (on both servers); returns how many. */
    @Override
    public int killConnections() {
        int killed = 0;
        for (Side s : sides) {
            killed += s.server().killConnections(CLIENT);
        }
        return killed;
    }

    /**
     * Waits until each consumer has applied every committed message, then asserts exactly one effect row per committed
     * message (0 missing, 0 applied twice, the committing transaction's token) and that each consumer skipped at
     * least the duplicates the raw topic shows. Returns a line for the summary.
     */
    @Override
    public String check(Map<String, Map<Integer, String>> truth, int committed, long rawDuplicates, Duration wait) {
        StringBuilder summary = new StringBuilder("inbox consumers: ");
        for (Side s : sides) {
            Scenario.await(() -> s.consumer().applied() >= committed || s.consumer().failure() != null, wait,
                    () -> s.name() + " inbox consumer applied " + s.consumer().applied() + " of " + committed);
            Map<String, Integer> rows = new HashMap<>();
            List<String> wrong = new ArrayList<>();
            try (Connection c = s.db().getConnection(); Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT k, seq, token FROM e2e_effects")) {
                while (rs.next()) {
                    String id = rs.getString(1) + "#" + rs.getInt(2);
                    rows.merge(id, 1, Integer::sum);
                    Map<Integer, String> ofKey = truth.get(rs.getString(1));
                    String token = ofKey == null ? null : ofKey.get(rs.getInt(2));
                    if (!rs.getString(3).equals(token)) {
                        wrong.add(id + " applied from " + rs.getString(3) + ", committed by " + token);
                    }
                }
            } catch (SQLException e) {
                throw new IllegalStateException("reading the effects of " + s.name(), e);
            }
            List<String> missing = new ArrayList<>();
            truth.forEach((k, seqs) -> seqs.keySet().forEach(seq -> {
                if (!rows.containsKey(k + "#" + seq)) {
                    missing.add(k + "#" + seq);
                }
            }));
            List<String> twice = rows.entrySet().stream().filter(e -> e.getValue() > 1)
                    .map(e -> e.getKey() + " x" + e.getValue()).toList();
            assertThat(s.consumer().failure()).as("%s inbox consumer failure", s.name()).isNull();
            assertThat(missing).as("%s: committed messages without an effect", s.name()).isEmpty();
            assertThat(twice).as("%s: effects applied twice", s.name()).isEmpty();
            assertThat(wrong).as("%s: effects of messages that were not committed so", s.name()).isEmpty();
            assertThat(rows).as("%s: effect rows", s.name()).hasSize(committed);
            assertThat(s.consumer().failed()).as("%s: records given up on", s.name()).isZero();
            assertThat(s.consumer().duplicates()).as("%s: duplicates skipped (the raw topic has %d)", s.name(),
                    rawDuplicates).isGreaterThanOrEqualTo(rawDuplicates);
            summary.append(s.name()).append(' ').append(rows.size()).append(" effects, 0 missing, 0 twice, ")
                    .append(s.consumer().duplicates()).append(" duplicates skipped; ");
        }
        return summary.toString();
    }

    @Override
    public void close() {
        for (Side s : sides) {
            s.consumer().close();
        }
    }

    private static void execute(DataSource db, String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("failed: " + sql, e);
        }
    }
}
