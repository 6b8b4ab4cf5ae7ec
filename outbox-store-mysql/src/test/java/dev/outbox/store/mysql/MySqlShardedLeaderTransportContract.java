package dev.outbox.store.mysql;

import dev.outbox.store.sql.SqlShardedLeaderTransportContract;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.api.BeforeAll;

import java.util.Locale;

/** The sharded leader transport contract for shard leases in a real server; run for MySQL 8 and for MariaDB. */
abstract class MySqlShardedLeaderTransportContract extends SqlShardedLeaderTransportContract {
    MySqlShardedLeaderTransportContract() {
        super(MySqlStore::builder);
    }

    /** The server this run uses. */
    abstract JdbcServer.Kind kind();

    @BeforeAll
    void startDatabase() {
        String suffix = kind().name().toLowerCase(Locale.ROOT);
        String url = MySqlTestSupport.database(kind(), "outbox_shard_lease_contract_" + suffix);
        storePool = MySqlTestSupport.pool(kind(), url, "shard_lease_contract", 12);
    }
}
