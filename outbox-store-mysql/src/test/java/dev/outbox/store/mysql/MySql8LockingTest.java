package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** How marks lock, against MySQL 8. */
class MySql8LockingTest extends MySqlLockingTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
