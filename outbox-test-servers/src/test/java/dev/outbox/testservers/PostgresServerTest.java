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
