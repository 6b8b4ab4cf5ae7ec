package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlStoreContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/**
 * The store contract against a real server, the store on one connection pool and the writers on another. Run
 * for MySQL 8 and for MariaDB by the two subclasses.
 */
abstract class MySqlStoreContract extends SqlStoreContract {

    MySqlStoreContract() {
        // The malformed row has a header object without a name: written by hand, as another language might.
        super(MySqlStore::builder,
                "INSERT INTO ${table} (topic, `key`, value, headers)"
                        + " VALUES ('${topic}', '${key}', 'x', JSON_ARRAY(JSON_OBJECT('value', TO_BASE64('a'))))",
                "INSERT INTO ${table} (topic, `key`, value, attempts) VALUES ('${topic}', '${key}', 'x', ${attempts})",
                "INSERT INTO ${table} (id, topic, `key`, value) VALUES (${id}, '${topic}', '${key}', 'x')");
    }

    /** AUTO_INCREMENT moves on past a writer's id; the id guard refuses only ids below 1. */
    @Override
    protected boolean idsAboveTheSequenceMoveItOn() {
        return true;
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_store_contract_" + suffix);
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "contract_store", 8);
        appPool = MySqlTestSupport.pool(kind(), url, "contract_app", 12);
    }
}
