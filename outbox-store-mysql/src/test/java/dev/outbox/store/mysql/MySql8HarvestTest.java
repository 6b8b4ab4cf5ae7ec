package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** End-to-end harvest with a leader change, against MySQL 8. */
class MySql8HarvestTest extends MySqlHarvestTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
