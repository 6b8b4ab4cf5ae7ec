package dev.outbox.testservers;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MariaDbServerTest extends JdbcServerContract {

    @Override
    JdbcServer server() {
        return TestServers.mariadb();
    }

    @Override
    JdbcServer.Kind expectedKind() {
        return JdbcServer.Kind.MARIADB;
    }

    @Test
    void isMariaDb11AndShared() {
        assertThat(server().version()).startsWith("11.");
        assertThat(TestServers.jdbc(JdbcServer.Kind.MARIADB)).isSameAs(server());
    }
}
