package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlShardedStoreContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/** The sharded store contract against a real server: MySQL 8 and MariaDB by the two subclasses. */
abstract class MySqlShardedStoreContract extends SqlShardedStoreContract {

    MySqlShardedStoreContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_sharded_contract_" + suffix);
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "sharded_store", 4);
        appPool = MySqlTestSupport.pool(kind(), url, "sharded_app", 2);
    }
}
