package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

class PostgresServerTest extends JdbcServerContract {

    @Override
    JdbcServer server() {
        return TestServers.postgres();
    }

    @Override
    JdbcServer.Kind expectedKind() {
        return JdbcServer.Kind.POSTGRES;
    }

    @Test
    void isPostgres17AndShared() {
        assertThat(server().version()).startsWith("17.");
        assertThat(TestServers.postgres()).isSameAs(server());
        assertThat(TestServers.jdbc(JdbcServer.Kind.POSTGRES)).isSameAs(server());
    }

    @Test
    void aSmallTablespaceFillsUpWithDiskFull() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("disk_full");
        assertThat(server.createSmallTablespace("tiny_ts", 1024 * 1024)).isEqualTo("tiny_ts");
        javax.sql.DataSource db = server.dataSource(url);
        execute(db, "CREATE TABLE t (v TEXT) TABLESPACE tiny_ts", "ALTER TABLE t ALTER COLUMN v SET STORAGE PLAIN");
        // 2,000 rows of 1 KiB need about 2.3 MiB: more than the tablespace holds.
        assertThatThrownBy(() -> execute(db, "INSERT INTO t SELECT repeat('x', 1000) FROM generate_series(1, 2000)"))
                .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("53100"));
        execute(db, "INSERT INTO t VALUES ('small rows still fit')");
        execute(db, "DROP TABLE t");
        assertThatThrownBy(() -> server.createSmallTablespace("bad", 1024))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1024");
    }

    @Test
    void onlyPostgresHasSmallTablespaces() {
        assertThatThrownBy(() -> TestServers.mariadb().createSmallTablespace("ts", 1 << 20))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("MariaDB");
    }

    @Test
    void killConnectionsByApplicationName() throws SQLException {
        JdbcServer server = server();
        String url = server.createDatabase("kill_by_app");
        try (Connection tagged = server.dataSource(url + "?ApplicationName=dispatcher_a").getConnection();
             Connection other = server.dataSource(url + "?ApplicationName=dispatcher_b").getConnection()) {
            assertThat(queryInt(tagged, "SELECT 1")).isEqualTo(1);
            assertThat(server.killConnections("dispatcher_a")).isEqualTo(1);
            assertThatThrownBy(() -> queryInt(tagged, "SELECT 1")).isInstanceOf(SQLException.class);
            assertThat(queryInt(other, "SELECT 1")).isEqualTo(1);
        }
    }
}
