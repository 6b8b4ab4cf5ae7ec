package dev.outbox.store.mysql;

import dev.outbox.testservers.JdbcServer;

/** "Not before" against MySQL 8. */
class MySql8ScheduledMessagesTest extends MySqlScheduledMessagesContract {
    @Override
    JdbcServer.Kind kind() {
        return JdbcServer.Kind.MYSQL;
    }
}
