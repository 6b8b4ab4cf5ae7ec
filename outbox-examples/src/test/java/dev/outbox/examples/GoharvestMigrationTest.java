package dev.outbox.examples;

import dev.outbox.Header;
import dev.outbox.OutboxRecord;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's goharvest migration: a table in goharvest's layout, renamed, copied into the new outbox by
 * {@code goharvest-migration.sql}; the store must then read every row as the message goharvest would have sent.
 */
class GoharvestMigrationTest {

    @Test
    void rowsOfAGoharvestTableBecomeTheSameMessagesInTheSameOrder() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        DataSource dataSource = postgres.dataSource(postgres.createDatabase("goharvest_migration"));
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            // goharvest's documented layout, with a few unpublished rows
            s.execute("CREATE TABLE outbox (id bigserial PRIMARY KEY, create_time timestamptz NOT NULL,"
                    + " kafka_topic varchar(249) NOT NULL, kafka_key varchar(100) NOT NULL,"
                    + " kafka_value varchar(10000), kafka_header_keys text[] NOT NULL,"
                    + " kafka_header_values text[] NOT NULL, leader_id uuid)");
            s.execute("INSERT INTO outbox (create_time, kafka_topic, kafka_key, kafka_value, kafka_header_keys,"
                    + " kafka_header_values, leader_id) VALUES"
                    + " (now(), 'orders', 'k1', 'first', '{}', '{}', NULL),"
                    + " (now(), 'orders', 'k2', NULL, '{}', '{}', gen_random_uuid()),"
                    + " (now(), 'billing', 'k1', 'second é', ARRAY['a','b','a'], ARRAY['1',NULL,'3'], NULL)");
            s.execute("DELETE FROM outbox WHERE id = 1"); // published: ids need not be dense
            s.execute("INSERT INTO outbox (create_time, kafka_topic, kafka_key, kafka_value, kafka_header_keys,"
                    + " kafka_header_values) VALUES (now(), 'orders', 'k1', 'third', '{}', '{}')");

            // the steps the README gives, with goharvest and the old writers stopped
            s.execute("ALTER TABLE outbox RENAME TO outbox_goharvest");
            PostgresStore store = PostgresStore.builder(dataSource).build();
            store.createSchema();
            s.execute(resource("goharvest-migration.sql"));

            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM outbox_goharvest")) {
                rs.next();
                assertThat(rs.getLong(1)).as("rows left in the old table").isZero();
            }
            List<OutboxRecord> records = store.mark(UUID.randomUUID(), 100).records();
            assertThat(records).extracting(OutboxRecord::topic).containsExactly("orders", "billing", "orders");
            assertThat(records).extracting(OutboxRecord::key).containsExactly("k2", "k1", "k1");
            assertThat(records.get(0).message().isTombstone()).as("NULL kafka_value is a tombstone").isTrue();
            assertThat(new String(records.get(1).message().value(), StandardCharsets.UTF_8)).isEqualTo("second é");
            assertThat(records.get(1).message().headers()).containsExactly(Header.of("a", "1"),
                    Header.of("b", (byte[]) null), Header.of("a", "3"));
            assertThat(new String(records.get(2).message().value(), StandardCharsets.UTF_8)).isEqualTo("third");
            assertThat(records).extracting(OutboxRecord::attempts).containsOnly(0);
        }
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = GoharvestMigrationTest.class.getResourceAsStream("/" + name)) {
            assertThat(in).as(name).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
