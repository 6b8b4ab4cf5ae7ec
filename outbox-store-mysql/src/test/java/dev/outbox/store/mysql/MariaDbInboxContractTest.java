package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The inbox contract against MariaDB. */
class MariaDbInboxContractTest extends MySqlInboxContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
