package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MySqlServerTest extends JdbcServerContract {

    @Override
    JdbcServer server() {
        return TestServers.mysql();
    }

    @Override
    JdbcServer.Kind expectedKind() {
        return JdbcServer.Kind.MYSQL;
    }

    @Test
    void isMySql8AndShared() {
        assertThat(server().version()).startsWith("8.");
        assertThat(TestServers.jdbc(JdbcServer.Kind.MYSQL)).isSameAs(server());
    }
}
