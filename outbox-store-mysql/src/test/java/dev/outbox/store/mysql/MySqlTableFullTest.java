package dev.outbox.store.mysql;

import dev.outbox.spi.StoreException;
import dev.outbox.testservers.JdbcServer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A table that cannot grow, on the real servers: MySQL and MariaDB refuse the write with error 1114
 * ({@code ER_RECORD_FILE_FULL}, "The table is full"), which the store classes as retriable, like a full disk (1021).
 * The table here is a {@code MEMORY} table capped by {@code max_heap_table_size} (what a full tablespace gives an
 * InnoDB table needs a file system the test cannot size on every machine).
 */
class MySqlTableFullTest {

    @ParameterizedTest
    @EnumSource(value = JdbcServer.Kind.class, names = {"MYSQL", "MARIADB"})
    void aFullTableIsRetriable(JdbcServer.Kind kind) throws SQLException {
        String url = MySqlTestSupport.database(kind, "table_full");
        SQLException full = null;
        try (Connection c = MySqlTestSupport.admin(kind, url).getConnection(); Statement s = c.createStatement()) {
            s.execute("SET SESSION max_heap_table_size = 16384");
            s.execute("CREATE TABLE capped (v VARCHAR(200)) ENGINE = MEMORY");
            for (int i = 0; i < 10_000 && full == null; i++) {
                try {
                    s.execute("INSERT INTO capped VALUES (REPEAT('x', 200))");
                } catch (SQLException e) {
                    full = e;
                }
            }
        }
        assertThat((Object) full).as("the capped table filled up").isNotNull();
        assertThat(full.getErrorCode()).as(full.getMessage()).isEqualTo(1114);

        StoreException translated = MySqlDialect.ERRORS.translate("writing 1 message(s) to `outbox`", full);
        assertThat(translated.isRetriable()).as(translated.getMessage()).isTrue();
        assertThat(translated.getMessage()).contains("error 1114");
    }
}
