package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded store contract against MariaDB. */
class MariaDbShardedStoreContractTest extends MySqlShardedStoreContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
