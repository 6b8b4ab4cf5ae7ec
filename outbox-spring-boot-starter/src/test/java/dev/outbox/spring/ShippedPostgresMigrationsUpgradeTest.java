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
 * The shipped Postgres migration, run by Flyway and by Liquibase over an outbox table of an earlier version (a plain
 * {@code nextval} id default): it gives the table the id default that takes the transaction id first (which the
 * cursor harvest's late-commit rule needs) and the id guard that refuses an id set by a writer (#42), and running it
 * again changes nothing. Liquibase sends the file as one
 * statement: its own splitter would cut the {@code DO} block at its semicolons.
 */
class ShippedPostgresMigrationsUpgradeTest {
    private static final String XID_FIRST = "CASE WHEN (pg_current_xact_id() IS NOT NULL) THEN"
            + " (set_config('dev_outbox.id'::text, (nextval(";

    @Test
    void flywayUpgradesTheIdDefaultOfAnExistingTable() throws Exception {
        DataSource db = oldTable("migrations_flyway");
        Flyway flyway = Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/postgresql")
                .placeholders(Map.of("outbox_table", "\"outbox\"", "outbox_parked_table", "\"outbox_parked\"",
                        "outbox_leader_table", "\"outbox_leader\""))
                .baselineOnMigrate(true).load();
        flyway.migrate();

        assertThat(idDefault(db)).contains(XID_FIRST);
        flyway.migrate();
        assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox")).isEqualTo(1);
        Jdbc.execute(db, "INSERT INTO outbox (topic, key) VALUES ('t', 'k')");
        assertThat(Jdbc.queryLong(db, "SELECT max(id) FROM outbox")).as("the same sequence").isEqualTo(2);
        assertThatThrownBy(() -> Jdbc.execute(db, "INSERT INTO outbox (id, topic, key) VALUES (-1, 't', 'k')"))
                .as("the id guard (#42)").hasMessageContaining("the outbox assigns its ids");
    }

    @Test
    void liquibaseUpgradesTheIdDefaultOfAnExistingTable() throws Exception {
        DataSource db = oldTable("migrations_liquibase");
        liquibase(db);

        assertThat(idDefault(db)).contains(XID_FIRST);
        long version = Jdbc.queryLong(db, "SELECT CAST(CAST(xmin AS text) AS bigint) FROM pg_attrdef"
                + " WHERE adrelid = 'outbox'::regclass AND adnum = 1");
        liquibase(db);
        assertThat(Jdbc.queryLong(db, "SELECT CAST(CAST(xmin AS text) AS bigint) FROM pg_attrdef"
                + " WHERE adrelid = 'outbox'::regclass AND adnum = 1")).as("left alone the second time")
                .isEqualTo(version);
        assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM outbox_parked")).isZero();
        assertThatThrownBy(() -> Jdbc.execute(db, "INSERT INTO outbox (id, topic, key) VALUES (1000000, 't', 'k')"))
                .as("the id guard (#42)").hasMessageContaining("the outbox assigns its ids");
    }

    private static void liquibase(DataSource db) throws Exception {
        SpringLiquibase liquibase = new SpringLiquibase();
        liquibase.setDataSource(db);
        liquibase.setChangeLog("classpath:dev/outbox/migrations/liquibase-changelog.xml");
        liquibase.setResourceLoader(new DefaultResourceLoader());
        liquibase.afterPropertiesSet();
    }

    /** A database holding an outbox table whose id default is the plain {@code nextval} of bigserial, with a row. */
    private static DataSource oldTable(String name) {
        JdbcServer postgres = TestServers.postgres();
        DataSource db = postgres.dataSource(postgres.createDatabase(name));
        Jdbc.execute(db, "CREATE TABLE outbox (id bigserial PRIMARY KEY, create_time timestamptz NOT NULL DEFAULT now(),"
                + " topic text NOT NULL, key text NOT NULL, value bytea, header_names text[] NOT NULL DEFAULT '{}',"
                + " header_values bytea[] NOT NULL DEFAULT '{}', leader_id uuid, attempts integer NOT NULL DEFAULT 0)");
        Jdbc.execute(db, "INSERT INTO outbox (topic, key) VALUES ('t', 'k')");
        return db;
    }

    private static String idDefault(DataSource db) throws Exception {
        try (var c = db.getConnection(); var s = c.createStatement(); var rs = s.executeQuery(
                "SELECT regexp_replace(pg_get_expr(adbin, adrelid), '\\s+', ' ', 'g') FROM pg_attrdef"
                        + " WHERE adrelid = 'outbox'::regclass AND adnum = 1")) {
            rs.next();
            return rs.getString(1);
        }
    }
}
