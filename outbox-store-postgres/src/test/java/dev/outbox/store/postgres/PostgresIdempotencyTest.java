package dev.outbox.store.postgres;

import dev.outbox.OutboxMessage;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlIdempotency;
import dev.outbox.store.sql.SqlIdempotencyKeysContract;
import dev.outbox.testkit.JdbcTestTransaction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Idempotency keys against a real Postgres; and in WAL mode, where the claim guards the emit instead of the row. */
class PostgresIdempotencyTest extends SqlIdempotencyKeysContract {
    private String url;

    PostgresIdempotencyTest() {
        super(PostgresStore::builder);
    }

    @Override
    protected String now() {
        return "now()";
    }

    @BeforeAll
    void startDatabase() {
        url = PostgresTestSupport.database("outbox_idempotency");
        admin = PostgresTestSupport.admin(url);
        storePool = PostgresTestSupport.pool(url, "idem_store", 4);
        appPool = PostgresTestSupport.pool(url, "idem_app", 8);
    }

    /** In WAL mode, a duplicate is not emitted: the slot streams the first message of the key only. */
    @Test
    void inWalModeADuplicateIsNotEmitted() throws Exception {
        PostgresStore store = PostgresStore.builder(storePool).table("idem_wal").idempotencyKeys(Duration.ofHours(1))
                .walHarvest(PostgresTestSupport.walHarvest(url, "idem_wal").build()).build();
        SqlTableNames names = PostgresDialect.DIALECT.tableNames().names(null, "idem_wal");
        store.createSchema();
        LogicalSlot.createPublication(admin, "idem_wal");
        try (LogicalSlot slot = new LogicalSlot(admin, "idem_wal_test", "idem_wal")) {
            for (String[] m : new String[][] {{"k1", "first"}, {"k1", "second"}, {"k2", "other"}, {null, "plain"}}) {
                try (JdbcTestTransaction tx = JdbcTestTransaction.begin(appPool, store.publisher())) {
                    tx.publish(List.of(OutboxMessage.builder("orders", "key").value(m[1]).idempotencyKey(m[0]).build()));
                    tx.commit();
                }
            }
            List<String> values = new ArrayList<>();
            for (LogicalSlot.Message m : slot.take(WalSql.prefix(names))) {
                values.add(new String(WalCodec.decode(m.content(), 100).message().value(), StandardCharsets.UTF_8));
            }
            assertThat(values).containsExactly("first", "other", "plain");
            assertThat(dev.outbox.testservers.Jdbc.queryLong(admin, "SELECT COUNT(*) FROM "
                    + SqlIdempotency.table(names))).isEqualTo(2);
        } finally {
            store.dropSlot();
            PostgresTestSupport.execute(admin, "DROP TABLE " + store.table() + ", " + store.parkedTable() + ", "
                    + store.leaderTable() + ", " + SqlIdempotency.table(names));
        }
    }
}
