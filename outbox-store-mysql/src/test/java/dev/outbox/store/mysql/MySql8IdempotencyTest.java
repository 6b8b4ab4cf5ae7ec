package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** Idempotency keys against MySQL 8. */
class MySql8IdempotencyTest extends MySqlIdempotencyContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
