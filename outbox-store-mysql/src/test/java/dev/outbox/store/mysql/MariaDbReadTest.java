package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The cursor harvest's read against MariaDB. */
class MariaDbReadTest extends MySqlReadTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
