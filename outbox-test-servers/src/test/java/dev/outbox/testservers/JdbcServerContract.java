package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** What every {@link JdbcServer} must do, run against a real server by each subclass. */
abstract class JdbcServerContract {

    /** The server under test; started on first call. */
    abstract JdbcServer server();

    abstract JdbcServer.Kind expectedKind();

    @Test
    void startsAndAnswers() throws SQLException {
        JdbcServer server = server();
        assertThat(server.kind()).isEqualTo(expectedKind());
        assertThat(server.mode()).isEqualTo(ServerMode.EMBEDDED);
        assertThat(server.version()).matches("[0-9]+\\.[0-9]+(\\.[0-9]+)?.*");
        assertThat(queryInt(server.dataSource(server.jdbcUrl()), "SELECT 1 + 1")).isEqualTo(2);
    }

    @Test
    void writesAndReadsBack() throws SQLException {
        JdbcServer server = server();
        DataSource db = server.dataSource(server.createDatabase("write_read"));
        execute(db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (1, 'one'), (2, 'two')");
        assertThat(queryStrings(db, "SELECT v FROM t ORDER BY id")).containsExactly("one", "two");
    }

    @Test
    void createDatabaseGivesAnEmptyDatabaseEachTime() throws SQLException {
        JdbcServer server = server();
        String first = server.createDatabase("isolated_a");
        execute(server.dataSource(first), "CREATE TABLE t (id INT)", "INSERT INTO t VALUES (1)");
        String other = server.createDatabase("isolated_b");
        assertThat(other).isNotEqualTo(first);
        execute(server.dataSource(other), "CREATE TABLE t (id INT)");
        assertThat(queryInt(server.dataSource(other), "SELECT count(*) FROM t")).isZero();

        // Again, with a connection still open: it is cut, and the database is dropped and created empty.
        try (Connection open = server.dataSource(first).getConnection()) {
            assertThat(server.createDatabase("isolated_a")).isEqualTo(first);
            assertThatThrownBy(() -> queryInt(open, "SELECT count(*) FROM t")).isInstanceOf(SQLException.class);
        }
        assertThatThrownBy(() -> queryInt(server.dataSource(first), "SELECT count(*) FROM t"))
                .isInstanceOf(SQLException.class);
    }

    @Test
    void rejectsBadNames() {
        JdbcServer server = server();
        assertThatThrownBy(() -> server.createDatabase("Bad-Name"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'Bad-Name'");
        assertThatThrownBy(() -> server.createUser("x; drop", "p"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'x; drop'");
        assertThatThrownBy(() -> server.createUser("ok", "it's"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("quotes");
        assertThatThrownBy(() -> server.killConnections(server.username()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(server.username());
    }

    @Test
    void killConnectionsCutsTheClientOnly() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("kill_test");
        server.createUser("victim", "secret1");
        server.createUser("bystander", "secret2");
        try (Connection victim = server.dataSource(url, "victim", "secret1").getConnection();
             Connection bystander = server.dataSource(url, "bystander", "secret2").getConnection()) {
            assertThat(queryInt(victim, "SELECT 1")).isEqualTo(1);
            assertThat(queryInt(bystander, "SELECT 1")).isEqualTo(1);

            assertThat(server.killConnections("victim")).isEqualTo(1);

            assertThatThrownBy(() -> queryInt(victim, "SELECT 1")).isInstanceOf(SQLException.class);
            assertThat(queryInt(bystander, "SELECT 1")).isEqualTo(1);
        }
        try (Connection again = server.dataSource(url, "victim", "secret1").getConnection()) {
            assertThat(queryInt(again, "SELECT 1")).isEqualTo(1);
        }
        assertThat(server.killConnections("nobody_connected")).isZero();
    }

    @Test
    void restartKeepsDataAndAddress() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("restart_test");
        execute(server.dataSource(url), "CREATE TABLE t (v VARCHAR(10))", "INSERT INTO t VALUES ('kept')");
        String before = server.jdbcUrl();
        try (Connection open = server.dataSource(url).getConnection()) {
            server.restart();
            assertThatThrownBy(() -> queryInt(open, "SELECT 1")).isInstanceOf(SQLException.class);
        }
        assertThat(server.jdbcUrl()).isEqualTo(before);
        assertThat(queryStrings(server.dataSource(url), "SELECT v FROM t")).containsExactly("kept");
    }

    @Test
    void stopCutsConnectionsAndRestartBringsItBack() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("stop_test");
        execute(server.dataSource(url), "CREATE TABLE t (v VARCHAR(10))", "INSERT INTO t VALUES ('kept')");
        try (Connection open = server.dataSource(url).getConnection()) {
            server.stop();
            server.stop(); // idempotent
            assertThatThrownBy(() -> queryInt(open, "SELECT 1")).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> server.dataSource(url).getConnection().close()).isInstanceOf(SQLException.class);
        } finally {
            server.restart();
        }
        assertThat(queryStrings(server.dataSource(url), "SELECT v FROM t")).containsExactly("kept");
    }

    @Test
    void pauseHangsStatementsUntilResume() throws Exception {
        JdbcServer server = server();
        String url = server.createDatabase("pause_test");
        execute(server.dataSource(url), "CREATE TABLE t (v INT)");
        try (Connection open = server.dataSource(url).getConnection()) {
            server.pause();
            java.util.concurrent.CompletableFuture<Integer> hanging = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> {
                        try {
                            return queryInt(open, "SELECT 41 + 1");
                        } catch (SQLException e) {
                            throw new java.util.concurrent.CompletionException(e);
                        }
                    });
            try {
                assertThatThrownBy(() -> hanging.get(1500, java.util.concurrent.TimeUnit.MILLISECONDS))
                        .isInstanceOf(java.util.concurrent.TimeoutException.class);
                server.pause(); // idempotent
            } finally {
                server.resume();
            }
            server.resume(); // idempotent
            assertThat(hanging.get(30, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(42);
            execute(server.dataSource(url), "INSERT INTO t VALUES (1)");
        }
    }

    @Test
    void readOnlyRefusesWritesAndCutsSessionsUntilTurnedOff() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("read_only_test");
        server.createUser("ro_client", "secret3");
        DataSource client = server.dataSource(url, "ro_client", "secret3");
        execute(client, "CREATE TABLE t (v INT)", "INSERT INTO t VALUES (1)");
        try (Connection open = client.getConnection()) {
            server.readOnly(true);
            try {
                assertThatThrownBy(() -> queryInt(open, "SELECT 1")).as("the session was cut")
                        .isInstanceOf(SQLException.class);
                assertThat(queryInt(client, "SELECT count(*) FROM t")).isEqualTo(1);
                assertThatThrownBy(() -> execute(client, "INSERT INTO t VALUES (2)"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(
                                server.kind() == JdbcServer.Kind.POSTGRES ? e.getSQLState()
                                        : Integer.toString(e.getErrorCode()))
                                .isIn("25006", "1290", "1836"));
            } finally {
                server.readOnly(false);
            }
        }
        execute(client, "INSERT INTO t VALUES (2)");
        assertThat(queryInt(client, "SELECT count(*) FROM t")).isEqualTo(2);
    }

    @Test
    void anExistingServerCannotBeStoppedOrRestarted() throws SQLException {
        JdbcServer embedded = server();
        JdbcServer external = DefaultJdbcServer.start(new ExternalJdbcBackend(embedded.kind(), embedded.jdbcUrl(),
                embedded.username(), embedded.password()));
        assertThat(external.mode()).isEqualTo(ServerMode.EXTERNAL);
        assertThat(external.version()).isEqualTo(embedded.version());
        String url = external.createDatabase("external_test");
        execute(external.dataSource(url), "CREATE TABLE t (id INT)");
        assertThatThrownBy(external::stop).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining(embedded.jdbcUrl());
        assertThatThrownBy(external::restart).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(external::pause).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> external.readOnly(true)).isInstanceOf(UnsupportedOperationException.class);
    }

    static void execute(DataSource ds, String... statements) throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            for (String sql : statements) {
                s.execute(sql);
            }
        }
    }

    static int queryInt(DataSource ds, String sql) throws SQLException {
        try (Connection c = ds.getConnection()) {
            return queryInt(c, sql);
        }
    }

    static int queryInt(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            assertThat(rs.next()).as("a row from %s", sql).isTrue();
            return rs.getInt(1);
        }
    }

    static List<String> queryStrings(DataSource ds, String sql) throws SQLException {
        List<String> values = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.add(rs.getString(1));
            }
        }
        return values;
    }
}
