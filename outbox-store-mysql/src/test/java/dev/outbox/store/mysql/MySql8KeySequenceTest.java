package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The per-key sequence and the replay marker against MySQL 8. */
class MySql8KeySequenceTest extends MySqlKeySequenceContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
