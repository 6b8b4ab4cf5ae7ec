package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The leader transport contract against MySQL 8. */
class MySql8LeaderTransportContractTest extends MySqlLeaderTransportContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
