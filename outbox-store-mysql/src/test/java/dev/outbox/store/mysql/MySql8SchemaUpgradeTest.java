package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The in-place schema upgrade on MySQL 8. */
class MySql8SchemaUpgradeTest extends MySqlSchemaUpgradeTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
