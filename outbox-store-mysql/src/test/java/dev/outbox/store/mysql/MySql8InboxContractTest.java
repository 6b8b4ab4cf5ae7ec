package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The inbox contract against MySQL 8. */
class MySql8InboxContractTest extends MySqlInboxContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
