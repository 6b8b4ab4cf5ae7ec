package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The leader transport contract against MariaDB. */
class MariaDbLeaderTransportContractTest extends MySqlLeaderTransportContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
