package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The store contract against MariaDB. */
class MariaDbStoreContractTest extends MySqlStoreContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
