package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** Idempotency keys against MariaDB. */
class MariaDbIdempotencyTest extends MySqlIdempotencyContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
