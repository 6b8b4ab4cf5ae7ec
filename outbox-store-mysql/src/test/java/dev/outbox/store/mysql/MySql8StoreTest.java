package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The MySQL store's own tests against MySQL 8. */
class MySql8StoreTest extends MySqlStoreTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
