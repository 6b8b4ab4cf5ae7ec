package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlKeySequenceContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/** The per-key sequence and the replay marker against a real server; run for MySQL 8 and for MariaDB. */
abstract class MySqlKeySequenceContract extends SqlKeySequenceContract {

    MySqlKeySequenceContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @Override
    protected String keyColumn() {
        return "`key`";
    }

    @BeforeAll
    void startDatabase() {
        String url = MySqlTestSupport.database(kind(), "outbox_key_sequence_" + kind().name().toLowerCase(Locale.ROOT));
        admin = MySqlTestSupport.admin(kind(), url);
        storePool = MySqlTestSupport.pool(kind(), url, "keyseq_store", 4);
        appPool = MySqlTestSupport.pool(kind(), url, "keyseq_app", 8);
    }
}
