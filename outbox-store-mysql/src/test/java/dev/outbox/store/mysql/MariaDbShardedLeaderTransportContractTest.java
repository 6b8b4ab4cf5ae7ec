package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded leader transport contract against MariaDB. */
class MariaDbShardedLeaderTransportContractTest extends MySqlShardedLeaderTransportContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
