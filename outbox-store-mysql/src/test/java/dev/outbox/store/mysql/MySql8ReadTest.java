package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The cursor harvest's read against MySQL 8. */
class MySql8ReadTest extends MySqlReadTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
