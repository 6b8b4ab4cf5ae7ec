package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The in-place schema upgrade on MariaDB. */
class MariaDbSchemaUpgradeTest extends MySqlSchemaUpgradeTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
