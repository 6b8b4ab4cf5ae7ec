package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** How marks lock, against MariaDB. */
class MariaDbLockingTest extends MySqlLockingTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
