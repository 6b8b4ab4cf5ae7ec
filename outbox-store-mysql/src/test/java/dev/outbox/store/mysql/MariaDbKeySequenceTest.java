package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** The per-key sequence and the replay marker against MariaDB. */
class MariaDbKeySequenceTest extends MySqlKeySequenceContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
