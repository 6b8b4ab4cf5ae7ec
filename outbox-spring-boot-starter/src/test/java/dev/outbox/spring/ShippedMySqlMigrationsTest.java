package dev.outbox.spring;

import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import liquibase.integration.spring.SpringLiquibase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.DefaultResourceLoader;

import javax.sql.DataSource;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The shipped MySQL migrations, run by Flyway and by Liquibase on MySQL 8, create the outbox's id guard (#42) after its
 * tables — Flyway's repeatable {@code R__outbox_tables_id_guard.sql} after {@code R__outbox_tables.sql}, Liquibase's
 * changeset sent whole (one compound statement): a row written without an id goes in (also by an
 * {@code INSERT ... SELECT}), one whose id is below 1 is refused, and running the migrations again changes nothing.
 */
class ShippedMySqlMigrationsTest {

    @Test
    void flywayCreatesTheIdGuard() {
        DataSource db = database("migrations_mysql_flyway");
        Flyway flyway = Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/mysql")
                .placeholders(Map.of("outbox_table", "`outbox`", "outbox_parked_table", "`outbox_parked`",
                        "outbox_leader_table", "`outbox_leader`", "outbox_id_guard", "`outbox_ids`"))
                .load();
        flyway.migrate();
        assertGuarded(db);
        flyway.migrate();
        assertThat(Jdbc.queryLong(db, "SELECT COUNT(*) FROM information_schema.triggers WHERE"
                + " trigger_schema = DATABASE() AND trigger_name = 'outbox_ids'")).isEqualTo(1);
    }

    @Test
    void liquibaseCreatesTheIdGuard() throws Exception {
        DataSource db = database("migrations_mysql_liquibase");
        liquibase(db);
        assertGuarded(db);
        liquibase(db);
        assertThat(Jdbc.queryLong(db, "SELECT COUNT(*) FROM outbox")).isZero();
    }

    private static void assertGuarded(DataSource db) {
        Jdbc.execute(db, "INSERT INTO outbox (topic, `key`, value) VALUES ('t', 'k', 'v')");
        assertThatThrownBy(() -> Jdbc.execute(db, "INSERT INTO outbox (id, topic, `key`, value)"
                + " VALUES (-5, 't', 'k', 'v')")).hasMessageContaining("the outbox assigns its ids");
        assertThat(Jdbc.queryLong(db, "SELECT COUNT(*) FROM outbox")).isEqualTo(1);
        Jdbc.execute(db, "INSERT INTO outbox (topic, `key`, value) SELECT topic, `key`, value FROM outbox");
        assertThat(Jdbc.queryLong(db, "SELECT COUNT(*) FROM outbox")).as("an INSERT ... SELECT from the table itself")
                .isEqualTo(2);
        Jdbc.execute(db, "DELETE FROM outbox");
    }

    private static void liquibase(DataSource db) throws Exception {
        SpringLiquibase liquibase = new SpringLiquibase();
        liquibase.setDataSource(db);
        liquibase.setChangeLog("classpath:dev/outbox/migrations/liquibase-changelog.xml");
        liquibase.setResourceLoader(new DefaultResourceLoader());
        liquibase.afterPropertiesSet();
    }

    private static DataSource database(String name) {
        JdbcServer mysql = TestServers.mysql();
        return mysql.dataSource(mysql.createDatabase(name));
    }
}
