package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The server's own faults (killed, read-only, paused) under a harvest, on MySQL 8. */
class MySql8ServerFaultsTest extends MySqlServerFaultsTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
