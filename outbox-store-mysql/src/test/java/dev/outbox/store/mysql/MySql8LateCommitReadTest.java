package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** Late commits under the cursor harvest's read, against MySQL 8. */
class MySql8LateCommitReadTest extends MySqlLateCommitReadTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
