package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The server's own faults (killed, read-only, paused) under a harvest, on MariaDB. */
class MariaDbServerFaultsTest extends MySqlServerFaultsTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
