package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The MySQL store's own tests against MariaDB. */
class MariaDbStoreTest extends MySqlStoreTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
