package dev.outbox.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Postgres id guard (#42) beyond the store contract's negative and far-above ids: it refuses an id a writer took
 * with {@code nextval} by hand (which escapes the transaction-id-first rule) with SQLSTATE 428C9, and lets through
 * every form of insert that leaves the id to the default — multi-row {@code VALUES}, {@code INSERT ... SELECT} in
 * any order, several statements in one transaction, and {@code COPY}.
 */
class PostgresIdGuardTest {
    private static HikariDataSource pool;
    private static PostgresStore store;

    @BeforeAll
    static void database() {
        String url = PostgresTestSupport.database("outbox_id_guard");
        pool = PostgresTestSupport.pool(url, "id_guard", 2);
        store = PostgresStore.builder(pool).table("guarded").build();
        store.createSchema();
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    @Test
    void anIdTakenByHandWithNextvalIsRefusedWith428C9() {
        assertThatThrownBy(() -> execute("INSERT INTO guarded (id, topic, key) VALUES"
                + " (nextval(pg_get_serial_sequence('guarded', 'id')), 't', 'k')"))
                .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("428C9"))
                .hasMessageContaining("the outbox assigns its ids: leave the id column out of the INSERT into guarded");
    }

    @Test
    void everyInsertThatLeavesTheIdToTheDefaultGoesIn() throws Exception {
        long before = count();
        execute("INSERT INTO guarded (topic, key) VALUES ('t', 'a'), ('t', 'b'), ('t', 'c')");
        execute("INSERT INTO guarded (topic, key) SELECT 't', 'k' || g FROM generate_series(1, 500) AS g ORDER BY g DESC");
        execute("INSERT INTO guarded (id, topic, key) VALUES (DEFAULT, 't', 'd')");
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO guarded (topic, key) VALUES ('t', 'e')");
                s.execute("INSERT INTO guarded (topic, key) VALUES ('t', 'f')");
            }
            c.commit();
        }
        try (Connection c = pool.getConnection()) {
            var copy = c.unwrap(org.postgresql.PGConnection.class).getCopyAPI();
            byte[] rows = "t\tg\nt\th\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            copy.copyIn("COPY guarded (topic, key) FROM STDIN", new java.io.ByteArrayInputStream(rows));
        }
        assertThat(count() - before).isEqualTo(3 + 500 + 1 + 2 + 2);
        assertThatThrownBy(() -> {
            try (Connection c = pool.getConnection()) {
                var copy = c.unwrap(org.postgresql.PGConnection.class).getCopyAPI();
                byte[] rows = "-1\tt\tcopied\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
                copy.copyIn("COPY guarded (id, topic, key) FROM STDIN", new java.io.ByteArrayInputStream(rows));
            }
        }).as("COPY that sets the id").isInstanceOf(SQLException.class).hasMessageContaining("assigns its ids");
    }

    private static long count() {
        return PostgresTestSupport.queryLong(pool, "SELECT count(*) FROM guarded");
    }

    private static void execute(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
