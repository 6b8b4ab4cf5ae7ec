package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The sharded store contract against MySQL 8. */
class MySql8ShardedStoreContractTest extends MySqlShardedStoreContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
