package dev.outbox.store.mysql;

import dev.outbox.store.sql.ScheduledMessagesContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Locale;

/** "Not before" against a real server; run for MySQL 8 and for MariaDB. */
abstract class MySqlScheduledMessagesContract extends ScheduledMessagesContract {

    MySqlScheduledMessagesContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @Override
    protected String microsUntilDueSql(String table) {
        return "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(due_at)) FROM " + table;
    }

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_scheduled_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "sched_store", 4);
        appPool = MySqlTestSupport.pool(kind(), url, "sched_app", 8);
    }

    @Test
    void movedRowsOfAShardedOutboxAreInTheirKeysShards() {
        aShardedOutboxFindsTheMovedRowsInTheirShards();
    }
}
