package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.StoreException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox table on a full disk: its tablespace is a 1 MiB file system of its own
 * ({@link dev.outbox.testservers.JdbcServer#createSmallTablespace}). Postgres refuses the write with SQLSTATE 53100
 * ({@code disk_full}), which the store reports as retriable, and writing works again once the table has room.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresDiskFullTest {

    @Test
    void aFullDiskIsARetriableFailureThatEndsWhenSpaceIsFreed() throws SQLException {
        String url = PostgresTestSupport.database("outbox_disk_full");
        String tablespace = PostgresTestSupport.server().createSmallTablespace("outbox_tiny", 1024 * 1024);
        DataSource admin = PostgresTestSupport.admin(url);
        try (HikariDataSource pool = PostgresTestSupport.pool(url, "disk_full", 2)) {
            PostgresStore store = PostgresStore.builder(pool).table("full_outbox").build();
            store.createSchema();
            PostgresTestSupport.execute(admin, "ALTER TABLE full_outbox SET TABLESPACE " + tablespace);

            StoreException full = null;
            int written = 0;
            byte[] value = new byte[2048];
            for (int batch = 0; batch < 100 && full == null; batch++) {
                List<OutboxMessage> messages = new ArrayList<>();
                for (int i = 0; i < 50; i++) {
                    messages.add(OutboxMessage.of("orders", "key-" + (i % 7), value));
                }
                try (Connection c = pool.getConnection()) {
                    store.publisher().publish(c, messages);
                    written += messages.size();
                } catch (StoreException e) {
                    full = e;
                }
            }

            assertThat(full).as("the 1 MiB tablespace filled up after %d messages", written).isNotNull();
            assertThat(full.getMessage()).contains("SQLSTATE 53100");
            assertThat(full.isRetriable()).as("disk full is retriable: %s", full.getMessage()).isTrue();
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM full_outbox")).isEqualTo(written);

            // An operator gives the table room (here: moves it to a disk with space): the same write works again,
            // and every row written before the disk filled is still there.
            PostgresTestSupport.execute(admin, "ALTER TABLE full_outbox SET TABLESPACE pg_default");
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, List.of(OutboxMessage.of("orders", "key-0", value)));
            }
            assertThat(PostgresTestSupport.queryLong(admin, "SELECT count(*) FROM full_outbox"))
                    .isEqualTo(written + 1);
        }
    }
}
