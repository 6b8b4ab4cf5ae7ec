package dev.outbox.spring;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlStore;
import dev.outbox.store.sql.SqlStoreContract;
import dev.outbox.testkit.Capabilities;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store contract on outbox tables that were created by the migration this project first shipped and then
 * upgraded by the current shipped migrations (#35): each test's tables are created in the oldest layout, migrated
 * (by Flyway or by Liquibase, {@link SchemaUpgrade}), checked to have exactly the layout the store's
 * {@code createSchema()} creates, and only then handed to the store. So the store's own {@code createSchema()}, which
 * the SQL contract calls on every table it makes, finds nothing to do: the contract runs on what the migrations made.
 * Run for Postgres and MySQL 8, each by Flyway and by Liquibase, in the subclasses (MariaDB's upgrade is checked by
 * {@link SchemaUpgradeTest}). The build runs Postgres by Flyway and MySQL 8 by Liquibase (each server and each tool
 * once); the other two are tagged slow (two migration runs per test: 100-175 s a class on the loaded 2-core machine)
 * and {@link SchemaUpgradeTest} checks their upgrades' layout, rows and second run.
 */
abstract class UpgradedSchemaContract extends SqlStoreContract {
    private final Upgrades upgrades;
    /**
     * The connections the migrations and the layout queries run on: a pool, as an application's migrations run on
     * its pool (a connection of its own for each of the two or three Flyway or Liquibase runs and the dozen catalog
     * queries per table took most of each test's time).
     */
    private HikariDataSource migrations;

    UpgradedSchemaContract(Upgrades upgrades) {
        super(upgrades::builder, upgrades.dialect == SchemaUpgrade.Dialect.POSTGRES
                        ? "INSERT INTO ${table} (topic, key, value, header_names, header_values)"
                        + " VALUES ('${topic}', '${key}', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])"
                        : "INSERT INTO ${table} (topic, `key`, value, headers)"
                        + " VALUES ('${topic}', '${key}', 'x', JSON_ARRAY(JSON_OBJECT('value', TO_BASE64('a'))))",
                upgrades.dialect == SchemaUpgrade.Dialect.POSTGRES
                        ? "INSERT INTO ${table} (topic, key, value, header_names, header_values, attempts)"
                        + " VALUES ('${topic}', '${key}', 'x', '{}', '{}', ${attempts})"
                        : "INSERT INTO ${table} (topic, `key`, value, attempts) VALUES ('${topic}', '${key}', 'x',"
                        + " ${attempts})",
                upgrades.dialect == SchemaUpgrade.Dialect.POSTGRES
                        ? "INSERT INTO ${table} (id, topic, key, value) VALUES (${id}, '${topic}', '${key}', 'x')"
                        : "INSERT INTO ${table} (id, topic, `key`, value) VALUES (${id}, '${topic}', '${key}', 'x')");
        this.upgrades = upgrades;
    }

    /** Where the suite's tables come from: the server, the dialect and the migration tool. */
    static final class Upgrades {
        final JdbcServer.Kind kind;
        final SchemaUpgrade.Dialect dialect;
        final SchemaUpgrade.Tool tool;
        /** Counts the tables as {@code SqlStoreContract} does: it asks for a builder once per table it names. */
        private final AtomicInteger tables = new AtomicInteger();
        private SchemaUpgrade upgrade;
        private String expectedLayout;
        private String lastTable;

        Upgrades(JdbcServer.Kind kind, SchemaUpgrade.Tool tool) {
            this.kind = kind;
            this.dialect = SchemaUpgrade.Dialect.of(kind);
            this.tool = tool;
        }

        private Function<DataSource, SqlStore.Builder<?, ?>> builders() {
            return dialect == SchemaUpgrade.Dialect.POSTGRES ? PostgresStore::builder : MySqlStore::builder;
        }

        /** Upgrades the tables the contract is about to name, then gives it the builder it names them with. */
        SqlStore.Builder<?, ?> builder(DataSource pool) {
            lastTable = "contract_" + tables.incrementAndGet();
            upgrade.createOldest(lastTable);
            upgrade.upgrade(lastTable);
            assertThat(upgrade.layout(lastTable)).as("the layout of %s after the upgrade by %s", lastTable, tool)
                    .isEqualTo(expectedLayout);
            return builders().apply(pool);
        }
    }

    /** MySQL's and MariaDB's {@code AUTO_INCREMENT} moves on past a writer's id; the id guard refuses only ids below 1. */
    @Override
    protected boolean idsAboveTheSequenceMoveItOn() {
        return upgrades.dialect == SchemaUpgrade.Dialect.MYSQL;
    }

    @BeforeAll
    void startDatabase() {
        JdbcServer server = TestServers.jdbc(upgrades.kind);
        String name = "upgraded_" + upgrades.kind.name().toLowerCase(Locale.ROOT) + "_"
                + upgrades.tool.name().toLowerCase(Locale.ROOT);
        String url = server.createDatabase(name);
        admin = server.dataSource(url);
        storePool = new HikariDataSource(Jdbc.poolConfig(url, server.username(), server.password(), 8, name + "_store"));
        appPool = new HikariDataSource(Jdbc.poolConfig(url, server.username(), server.password(), 12, name + "_app"));
        migrations = new HikariDataSource(Jdbc.poolConfig(url, server.username(), server.password(), 4,
                name + "_migrations"));
        upgrades.upgrade = new SchemaUpgrade(migrations, upgrades.dialect, upgrades.tool);
        // what the store creates itself, the layout every upgraded table must have
        SqlStore reference = upgrades.builders().apply(admin).table("reference").build();
        reference.createSchema();
        upgrades.expectedLayout = upgrades.upgrade.layout("reference");
        assertThat(upgrades.expectedLayout).contains("message_id").contains("next_attempt_at").contains("_leader");
    }

    @AfterAll
    void closeMigrations() {
        migrations.close();
    }

    @BeforeEach
    void theStoreIsOverTheUpgradedTables() {
        assertThat(((SqlStore) store).table()).as("the contract's table is the one just upgraded")
                .isEqualTo(upgrades.dialect.quote(upgrades.lastTable));
    }

    /**
     * A row written in the oldest layout, before the upgrade, is still there after it, without a message id; it is
     * read, given a message id (assigned once, by the store), and published after the upgrade. Running the
     * migrations a second time changes nothing.
     */
    @Test
    void aRowWrittenBeforeTheUpgradeIsReadAfterItWithAMessageId() {
        String table = "before_upgrade";
        SchemaUpgrade upgrade = new SchemaUpgrade(migrations, upgrades.dialect, upgrades.tool);
        upgrade.createOldest(table);
        String quoted = upgrades.dialect.quote(table);
        Jdbc.execute(admin, upgrades.dialect == SchemaUpgrade.Dialect.POSTGRES
                ? "INSERT INTO " + quoted + " (topic, key, value) VALUES ('orders', 'k', 'old')"
                : "INSERT INTO " + quoted + " (topic, `key`, value) VALUES ('orders', 'k', 'old')");
        upgrade.upgrade(table);
        assertThat(upgrade.layout(table)).as("after the upgrade by %s", upgrades.tool)
                .isEqualTo(upgrades.expectedLayout);
        upgrade.upgrade(table);
        assertThat(upgrade.layout(table)).as("after a second run").isEqualTo(upgrades.expectedLayout);
        SqlStore upgraded = upgrades.builders().apply(storePool).table(table).build();
        try {
            assertThat(Jdbc.queryLong(admin, "SELECT COUNT(*) FROM " + quoted + " WHERE message_id IS NULL"))
                    .as("the old row keeps a NULL message id until it is marked").isEqualTo(1);
            try (var tx = begin(upgraded)) {
                tx.publish(OutboxMessage.builder("orders", "k").value("new").build());
                tx.commit();
            }
            List<OutboxRecord> marked = Capabilities.marking(upgraded).mark(UUID.randomUUID(), 10).records();
            assertThat(marked).extracting(r -> new String(r.message().value(), StandardCharsets.UTF_8))
                    .containsExactly("old", "new");
            assertThat(marked).extracting(OutboxRecord::messageId).doesNotContainNull().doesNotHaveDuplicates();
            upgraded.purge(marked.stream().map(OutboxRecord::id).toList());
            assertThat(Capabilities.gauges(upgraded).backlog()).isZero();
        } finally {
            disposeStore(upgraded);
        }
    }
}
