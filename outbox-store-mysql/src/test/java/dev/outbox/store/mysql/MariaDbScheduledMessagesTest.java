package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** "Not before" against MariaDB. */
class MariaDbScheduledMessagesTest extends MySqlScheduledMessagesContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MARIADB;
    }
}
