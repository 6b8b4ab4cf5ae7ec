package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded table against MariaDB. */
class MariaDbShardsTest extends MySqlShardsTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
