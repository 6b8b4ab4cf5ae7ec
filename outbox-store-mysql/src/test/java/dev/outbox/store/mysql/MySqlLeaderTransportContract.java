package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlLeaderTransportContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/** The leader transport contract for leader election in a real server; run for MySQL 8 and for MariaDB. */
abstract class MySqlLeaderTransportContract extends SqlLeaderTransportContract {
    MySqlLeaderTransportContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_lease_contract_" + suffix);
        storePool = MySqlTestSupport.pool(kind(), url, "lease_contract", 12);
    }
}
