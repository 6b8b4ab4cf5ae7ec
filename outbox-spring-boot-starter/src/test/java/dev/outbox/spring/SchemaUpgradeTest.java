package dev.outbox.spring;

import dev.outbox.OutboxRecord;
import dev.outbox.store.mysql.MySqlInbox;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlStore;
import dev.outbox.testkit.Capabilities;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import liquibase.integration.spring.SpringLiquibase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.core.io.DefaultResourceLoader;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shipped migrations take the outbox tables from the layout this project first released to the one the store
 * creates today, by Flyway and by Liquibase, on MariaDB (and Postgres by Liquibase, MySQL 8 by Flyway, whose
 * {@link UpgradedSchemaContract} runs are tagged slow), keeping the rows; running them again changes nothing (on
 * Postgres and MySQL 8: {@link UpgradedSchemaContract}, which also runs the store contract on the upgraded tables);
 * on all three a new database gets the same layout from the versioned migrations alone, and the inbox's and the WAL
 * harvest's, the per-key sequence's and the delivery options' (scheduled table, idempotency keys) migrations create
 * what the inbox and the store create.
 */
class SchemaUpgradeTest {

    /** A server and a tool. */
    enum Case {
        POSTGRES_FLYWAY(JdbcServer.Kind.POSTGRES, SchemaUpgrade.Tool.FLYWAY),
        POSTGRES_LIQUIBASE(JdbcServer.Kind.POSTGRES, SchemaUpgrade.Tool.LIQUIBASE),
        MYSQL_FLYWAY(JdbcServer.Kind.MYSQL, SchemaUpgrade.Tool.FLYWAY),
        MYSQL_LIQUIBASE(JdbcServer.Kind.MYSQL, SchemaUpgrade.Tool.LIQUIBASE),
        MARIADB_FLYWAY(JdbcServer.Kind.MARIADB, SchemaUpgrade.Tool.FLYWAY),
        MARIADB_LIQUIBASE(JdbcServer.Kind.MARIADB, SchemaUpgrade.Tool.LIQUIBASE);

        final JdbcServer.Kind kind;
        final SchemaUpgrade.Tool tool;
        final SchemaUpgrade.Dialect dialect;

        Case(JdbcServer.Kind kind, SchemaUpgrade.Tool tool) {
            this.kind = kind;
            this.tool = tool;
            this.dialect = SchemaUpgrade.Dialect.of(kind);
        }

        DataSource database(String purpose) {
            JdbcServer server = TestServers.jdbc(kind);
            return server.dataSource(server.createDatabase(purpose + "_" + name().toLowerCase(Locale.ROOT)));
        }

        SqlStore store(DataSource db, String table) {
            return (dialect == SchemaUpgrade.Dialect.POSTGRES ? PostgresStore.builder(db) : MySqlStore.builder(db))
                    .table(table).build();
        }
    }

    /**
     * On MariaDB, and the two upgrades whose {@link UpgradedSchemaContract} runs are tagged slow (Postgres by
     * Liquibase, MySQL 8 by Flyway). In the build, every table of the other two subclasses (Postgres by Flyway, MySQL
     * 8 by Liquibase) is so upgraded and checked, and their
     * {@code aRowWrittenBeforeTheUpgradeIsReadAfterItWithAMessageId} checks the rows and a second run.
     */
    @ParameterizedTest
    @EnumSource(value = Case.class, names = {"MARIADB_FLYWAY", "MARIADB_LIQUIBASE", "POSTGRES_LIQUIBASE",
            "MYSQL_FLYWAY"})
    void theOldestLayoutIsUpgradedToTheStoresLayoutKeepingItsRows(Case c) {
        DataSource db = c.database("upgrade");
        SchemaUpgrade upgrade = new SchemaUpgrade(db, c.dialect, c.tool);
        c.store(db, "reference").createSchema();
        String expected = upgrade.layout("reference");
        upgrade.createOldest("events");
        assertThat(upgrade.layout("events")).as("the oldest layout").isNotEqualTo(expected)
                .doesNotContain("message_id").doesNotContain("next_attempt_at");
        String key = c.dialect == SchemaUpgrade.Dialect.POSTGRES ? "key" : "`key`";
        Jdbc.execute(db, "INSERT INTO events (topic, " + key + ", value) VALUES ('orders', 'k1', 'one')");
        Jdbc.execute(db, "INSERT INTO events (topic, " + key + ", value) VALUES ('orders', 'k2', 'two')");

        upgrade.upgrade("events");

        assertThat(upgrade.layout("events")).isEqualTo(expected);
        upgrade.upgrade("events");
        assertThat(upgrade.layout("events")).as("after a second run").isEqualTo(expected);
        SqlStore store = c.store(db, "events");
        List<OutboxRecord> rows = Capabilities.marking(store).mark(UUID.randomUUID(), 10).records();
        assertThat(rows).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                .containsExactly("one", "two");
        assertThat(rows).extracting(OutboxRecord::messageId).doesNotContainNull().doesNotHaveDuplicates();
        assertThat(Capabilities.fencing(store).acquireEpoch()).as("the leader table").isPositive();
    }

    /** A new application's path: Flyway with the versioned migrations only, or the changelog on an empty database. */
    @ParameterizedTest
    @EnumSource(Case.class)
    void aNewDatabaseGetsTheStoresLayout(Case c) {
        DataSource db = c.database("fresh");
        SchemaUpgrade upgrade = new SchemaUpgrade(db, c.dialect, c.tool);
        if (c.tool == SchemaUpgrade.Tool.FLYWAY) {
            Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/" + c.dialect.folder)
                    .placeholders(upgrade.placeholders("events")).load().migrate();
        } else {
            upgrade.upgrade("events");
        }
        c.store(db, "reference").createSchema();
        assertThat(upgrade.layout("events")).isEqualTo(upgrade.layout("reference"));
    }

    @ParameterizedTest
    @EnumSource(Case.class)
    void theInboxMigrationCreatesWhatTheInboxCreates(Case c) {
        DataSource db = c.database("inbox");
        boolean postgres = c.dialect == SchemaUpgrade.Dialect.POSTGRES;
        Map<String, String> names = Map.of("outbox_inbox_table", c.dialect.quote("inbox"),
                "outbox_inbox_failed_table", c.dialect.quote("inbox_failed"),
                "outbox_inbox_index", c.dialect.quote("inbox_processed_at"));
        if (c.tool == SchemaUpgrade.Tool.FLYWAY) {
            Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/"
                    + c.dialect.folder + "-inbox").placeholders(names).load().migrate();
        } else {
            liquibase(db, "classpath:dev/outbox/migrations/liquibase-inbox.xml");
        }
        if (postgres) {
            PostgresInbox.builder(db).table("reference_inbox").build().createSchema();
        } else {
            MySqlInbox.builder(db).table("reference_inbox").build().createSchema();
        }
        assertThat(inboxLayout(db, postgres, "inbox")).isEqualTo(inboxLayout(db, postgres, "reference_inbox"))
                .contains("message_id").contains("offset");
    }

    /** The per-key sequence's migration creates the counter table the store creates with keySequence(true). */
    @ParameterizedTest
    @EnumSource(Case.class)
    void theKeySequenceMigrationCreatesWhatTheStoreCreates(Case c) {
        DataSource db = c.database("keyseq");
        boolean postgres = c.dialect == SchemaUpgrade.Dialect.POSTGRES;
        if (c.tool == SchemaUpgrade.Tool.FLYWAY) {
            Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/"
                            + c.dialect.folder + "-key-sequence")
                    .placeholders(Map.of("outbox_key_seq_table", c.dialect.quote("outbox_key_seq"))).load().migrate();
        } else {
            liquibase(db, "classpath:dev/outbox/migrations/liquibase-key-sequence.xml");
        }
        (postgres ? PostgresStore.builder(db) : MySqlStore.builder(db)).table("reference").keySequence(true).build()
                .createSchema();
        SchemaUpgrade layouts = new SchemaUpgrade(db, c.dialect, c.tool);
        assertThat(layouts.tableLayout("outbox_key_seq").replace("outbox_key_seq", "T"))
                .isEqualTo(layouts.tableLayout("reference_key_seq").replace("reference_key_seq", "T"))
                .contains("seq");
    }

    /** "Not before"'s migration creates the scheduled table and indexes the store creates with scheduling(true). */
    @ParameterizedTest
    @EnumSource(Case.class)
    void theSchedulingMigrationCreatesWhatTheStoreCreates(Case c) {
        DataSource db = c.database("scheduling");
        boolean postgres = c.dialect == SchemaUpgrade.Dialect.POSTGRES;
        SchemaUpgrade upgrade = new SchemaUpgrade(db, c.dialect, c.tool);
        if (c.tool == SchemaUpgrade.Tool.FLYWAY) {
            // a new application's path: the outbox's versioned migrations (the Postgres message-id function the
            // scheduled table's default calls among them) and the option's, in one history
            Map<String, String> placeholders = upgrade.placeholders("outbox");
            placeholders.put("outbox_scheduled_table", c.dialect.quote("outbox_scheduled"));
            placeholders.put("outbox_scheduled_due_index", c.dialect.quote("outbox_scheduled_due"));
            placeholders.put("outbox_scheduled_key_index", c.dialect.quote("outbox_scheduled_key"));
            Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/"
                            + c.dialect.folder, "classpath:dev/outbox/migrations/versioned/" + c.dialect.folder
                            + "-scheduling").placeholders(placeholders).load().migrate();
        } else {
            upgrade.upgrade("outbox");
            liquibase(db, "classpath:dev/outbox/migrations/liquibase-scheduling.xml");
        }
        (postgres ? PostgresStore.builder(db) : MySqlStore.builder(db)).table("reference").scheduling(true).build()
                .createSchema();
        assertThat(upgrade.tableLayout("outbox_scheduled").replace("outbox_scheduled", "T"))
                .isEqualTo(upgrade.tableLayout("reference_scheduled").replace("reference_scheduled", "T"))
                .contains("due_at").contains("message_id");
    }

    /** The idempotency keys' migration creates the table the store creates with idempotencyKeys(retention). */
    @ParameterizedTest
    @EnumSource(Case.class)
    void theIdempotencyMigrationCreatesWhatTheStoreCreates(Case c) {
        DataSource db = c.database("idempotency");
        boolean postgres = c.dialect == SchemaUpgrade.Dialect.POSTGRES;
        if (c.tool == SchemaUpgrade.Tool.FLYWAY) {
            Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/"
                            + c.dialect.folder + "-idempotency")
                    .placeholders(Map.of("outbox_idempotency_table", c.dialect.quote("outbox_idempotency")))
                    .load().migrate();
        } else {
            liquibase(db, "classpath:dev/outbox/migrations/liquibase-idempotency.xml");
        }
        (postgres ? PostgresStore.builder(db) : MySqlStore.builder(db)).table("reference")
                .idempotencyKeys(java.time.Duration.ofDays(7)).build().createSchema();
        SchemaUpgrade layouts = new SchemaUpgrade(db, c.dialect, c.tool);
        assertThat(layouts.tableLayout("outbox_idempotency").replace("outbox_idempotency", "T"))
                .isEqualTo(layouts.tableLayout("reference_idempotency").replace("reference_idempotency", "T"))
                .contains("created_at");
    }

    @Test
    void theWalMigrationCreatesTheWriterFunctions() {
        for (SchemaUpgrade.Tool tool : SchemaUpgrade.Tool.values()) {
            DataSource db = (tool == SchemaUpgrade.Tool.FLYWAY ? Case.POSTGRES_FLYWAY : Case.POSTGRES_LIQUIBASE)
                    .database("wal");
            if (tool == SchemaUpgrade.Tool.FLYWAY) {
                Flyway.configure().dataSource(db).locations("classpath:dev/outbox/migrations/versioned/postgresql",
                                "classpath:dev/outbox/migrations/versioned/postgresql-wal")
                        .placeholders(Map.of("outbox_table", "\"outbox\"", "outbox_parked_table", "\"outbox_parked\"",
                                "outbox_leader_table", "\"outbox_leader\"", "outbox_wal_encode",
                                "\"outbox_wal_encode\"", "outbox_emit", "\"outbox_emit\"", "outbox_wal_prefix",
                                "dev.outbox:outbox"))
                        .load().migrate();
            } else {
                liquibase(db, "classpath:dev/outbox/migrations/liquibase-changelog.xml");
                liquibase(db, "classpath:dev/outbox/migrations/liquibase-wal.xml");
            }
            assertThat(Jdbc.queryString(db, "SELECT encode(substring(outbox_wal_encode('orders', 'k', 'v'::bytea)"
                    + " FROM 1 FOR 1), 'hex')")).as("format version 1, by %s", tool).isEqualTo("01");
            assertThat(Jdbc.queryString(db, "SELECT prosrc FROM pg_proc WHERE proname = 'outbox_emit'"))
                    .as("by %s", tool).contains("'dev.outbox:outbox'");
        }
    }

    private static String inboxLayout(DataSource db, boolean postgres, String table) {
        SchemaUpgrade dummy = new SchemaUpgrade(db, postgres ? SchemaUpgrade.Dialect.POSTGRES
                : SchemaUpgrade.Dialect.MYSQL, SchemaUpgrade.Tool.FLYWAY);
        return (dummy.tableLayout(table) + "\n" + dummy.tableLayout(table + "_failed")).replace(table, "T");
    }

    private static void liquibase(DataSource db, String changelog) {
        SpringLiquibase liquibase = new SpringLiquibase();
        liquibase.setDataSource(db);
        liquibase.setChangeLog(changelog);
        liquibase.setResourceLoader(new DefaultResourceLoader());
        try {
            liquibase.afterPropertiesSet();
        } catch (Exception e) {
            throw new IllegalStateException("Liquibase " + changelog, e);
        }
    }
}
