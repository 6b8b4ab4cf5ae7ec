package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded table against MySQL 8. */
class MySql8ShardsTest extends MySqlShardsTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
