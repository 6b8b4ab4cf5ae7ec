package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded leader transport contract against MySQL 8. */
class MySql8ShardedLeaderTransportContractTest extends MySqlShardedLeaderTransportContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
