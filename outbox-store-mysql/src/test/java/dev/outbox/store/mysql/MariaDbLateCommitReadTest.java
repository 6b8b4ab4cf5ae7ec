package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** Late commits under the cursor harvest's read, against MariaDB. */
class MariaDbLateCommitReadTest extends MySqlLateCommitReadTests {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
