package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlIdempotencyKeysContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/** Idempotency keys against a real server; run for MySQL 8 and for MariaDB. */
abstract class MySqlIdempotencyContract extends SqlIdempotencyKeysContract {

    MySqlIdempotencyContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @Override
    protected String now() {
        return "NOW(6)";
    }

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_idempotency_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "idem_store", 4);
        appPool = MySqlTestSupport.pool(kind(), url, "idem_app", 8);
    }
}
