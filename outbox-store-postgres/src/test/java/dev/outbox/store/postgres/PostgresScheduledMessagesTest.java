package dev.outbox.store.postgres;

import dev.outbox.OutboxMessage;
import dev.outbox.store.sql.ScheduledMessagesContract;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** "Not before" against a real Postgres; and the WAL harvest, which refuses it. */
class PostgresScheduledMessagesTest extends ScheduledMessagesContract {

    private String url;

    PostgresScheduledMessagesTest() {
        super(PostgresStore::builder);
    }

    @Override
    protected String microsUntilDueSql(String table) {
        return "SELECT CAST(EXTRACT(EPOCH FROM (min(due_at) - clock_timestamp())) * 1000000 AS bigint) FROM " + table;
    }

    @BeforeAll
    void startDatabase() {
        url = PostgresTestSupport.database("outbox_scheduled");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "sched_store", 4);
        appPool = PostgresTestSupport.pool(url, "sched_app", 8);
    }

    @Test
    void movedRowsOfAShardedOutboxAreInTheirKeysShards() {
        aShardedOutboxFindsTheMovedRowsInTheirShards();
    }

    /**
     * The WAL harvest cannot hold a logical message back: a store built with both is refused, and a delayed message
     * written to a WAL store is refused at write time, naming it and the harvest.
     */
    @Test
    void theWalHarvestRefusesSchedulingAndDelayedMessages() throws Exception {
        assertThatThrownBy(() -> PostgresStore.builder(storePool).table("sched_wal").walHarvest(PostgresTestSupport
                .walHarvest(url, "sched_wal").build()).scheduling(true).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("walHarvest")
                .hasMessageContaining("scheduling(true)");
        PostgresStore wal = PostgresStore.builder(storePool).table("sched_wal")
                .walHarvest(PostgresTestSupport.walHarvest(url, "sched_wal").build()).build();
        OutboxMessage delayed = OutboxMessage.builder("orders", "k").value("v").deliverAfter(Duration.ofSeconds(2))
                .build();
        try (Connection c = storePool.getConnection()) {
            assertThatThrownBy(() -> wal.publisher().publish(c, List.of(delayed)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("message 0")
                    .hasMessageContaining("'k'").hasMessageContaining("walHarvest");
        }
    }
}
