package dev.outbox.store.h2;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.store.sql.SqlLeaderTransportContract;
import dev.outbox.testservers.Jdbc;
import org.junit.jupiter.api.BeforeAll;

/**
 * The leader transport contract for leader election in a real H2, embedded: the contenders are threads of this JVM
 * sharing one in-memory database, as dispatchers of one JVM (or of several, through H2's TCP server) would.
 */
class H2LeaderTransportContractTest extends SqlLeaderTransportContract {
    private static final String URL = "jdbc:h2:mem:outbox_lease_contract;DB_CLOSE_DELAY=-1";

    H2LeaderTransportContractTest() {
        super(H2Store::builder);
    }

    @BeforeAll
    void startDatabase() {
        storePool = new HikariDataSource(Jdbc.poolConfig(URL, "sa", "", 12, "h2-lease-contract"));
    }
}
