package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The store contract against MySQL 8. */
class MySql8StoreContractTest extends MySqlStoreContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
