package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** End-to-end harvest with a leader change, against MariaDB. */
class MariaDbHarvestTest extends MySqlHarvestTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
