package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;
import liquibase.integration.spring.SpringLiquibase;
import org.flywaydb.core.Flyway;
import org.springframework.core.io.DefaultResourceLoader;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An upgrade of the outbox tables, as an application that has run the migrations this project first shipped makes
 * it: the tables are created by the first release's migration (test resources {@code dev/outbox/migrations-oldest},
 * copied from git, in outbox-store-sql's test jar, which the stores' schema upgrade tests read too), then the current shipped migrations run over them. And the layout the tables end up with, read
 * from the database's catalog, to compare with what the store's {@code createSchema()} creates.
 */
final class SchemaUpgrade {
    /** The database, and the shipped migrations' folder for it. */
    enum Dialect {
        POSTGRES("postgresql", '"'),
        MYSQL("mysql", '`');

        final String folder;
        final char quote;

        Dialect(String folder, char quote) {
            this.folder = folder;
            this.quote = quote;
        }

        static Dialect of(JdbcServer.Kind kind) {
            return kind == JdbcServer.Kind.POSTGRES ? POSTGRES : MYSQL;
        }

        String quote(String name) {
            return quote + name + quote;
        }
    }

    /** How the application migrates. */
    enum Tool {
        /**
         * Flyway: the first release's repeatable migration next to an application's own {@code V1}, then the current
         * repeatable one kept and the versioned ones added, with {@code outOfOrder} (their versions lie below the
         * application's), as the Spring page says.
         */
        FLYWAY,
        /** Liquibase: the first release's changelog, then the current one (the same file, changed). */
        LIQUIBASE
    }

    private final DataSource admin;
    private final Dialect dialect;
    private final Tool tool;

    SchemaUpgrade(DataSource admin, Dialect dialect, Tool tool) {
        this.admin = admin;
        this.dialect = dialect;
        this.tool = tool;
    }

    /** Creates the outbox tables of {@code table} as the first release's migration did (the oldest layout). */
    void createOldest(String table) {
        if (tool == Tool.FLYWAY) {
            flyway(table, false, "classpath:dev/outbox/migrations-oldest/" + dialect.folder,
                    "classpath:dev/outbox/migrations-app");
        } else {
            liquibase(table, "classpath:dev/outbox/migrations-oldest/liquibase-changelog.xml");
        }
    }

    /** Runs the current shipped migrations over the tables of {@code table}. */
    void upgrade(String table) {
        if (tool == Tool.FLYWAY) {
            flyway(table, true, "classpath:dev/outbox/migrations/" + dialect.folder,
                    "classpath:dev/outbox/migrations/versioned/" + dialect.folder,
                    "classpath:dev/outbox/migrations-app");
        } else {
            liquibase(table, "classpath:dev/outbox/migrations/liquibase-changelog.xml");
        }
    }

    /** The names the migrations take, as the starter fills them in from {@code outbox.store.table}. */
    Map<String, String> placeholders(String table) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("outbox_table", dialect.quote(table));
        p.put("outbox_parked_table", dialect.quote(table + "_parked"));
        p.put("outbox_leader_table", dialect.quote(table + "_leader"));
        p.put("outbox_id_guard", dialect.quote(table + "_ids"));
        return p;
    }

    private void flyway(String table, boolean outOfOrder, String... locations) {
        Map<String, String> placeholders = placeholders(table);
        placeholders.put("app_table", "app_" + table);
        // a history table per outbox, in a schema that other outboxes' tables already fill: baselined below every
        // version at the first run
        Flyway.configure().dataSource(admin).table("history_" + table).locations(locations)
                .placeholders(placeholders).outOfOrder(outOfOrder).baselineOnMigrate(true).baselineVersion("0")
                .load().migrate();
    }

    private void liquibase(String table, String changelog) {
        SpringLiquibase liquibase = new SpringLiquibase();
        liquibase.setDataSource(admin);
        liquibase.setChangeLog(changelog);
        liquibase.setResourceLoader(new DefaultResourceLoader());
        // a changelog table per outbox: the changesets' ids are the same for every table of the suite
        liquibase.setDatabaseChangeLogTable("changelog_" + table);
        liquibase.setDatabaseChangeLogLockTable("changelog_lock_" + table);
        liquibase.setChangeLogParameters(placeholders(table));
        try {
            liquibase.afterPropertiesSet();
        } catch (Exception e) {
            throw new IllegalStateException("Liquibase " + changelog + " failed for " + table, e);
        }
    }

    /**
     * The layout of the outbox tables of {@code table}, with the table's name written {@code T}: columns (name,
     * type, nullability, default) in order, triggers, indexes and storage options on Postgres; {@code SHOW CREATE
     * TABLE} (without the counter) and triggers on MySQL and MariaDB.
     */
    String layout(String table) {
        List<String> parts = new ArrayList<>();
        for (String t : List.of(table, table + "_parked", table + "_leader")) {
            parts.add(tableLayout(t));
        }
        return String.join("\n", parts).replace(table, "T");
    }

    /** The layout of one table, as {@link #layout(String)} reads it, its name as it is. */
    String tableLayout(String t) {
        List<String> parts = new ArrayList<>();
        if (dialect == Dialect.POSTGRES) {
            if (rows("SELECT to_regclass('\"" + t + "\"')").equals("null") || rows("SELECT to_regclass('\"" + t
                    + "\"')").isEmpty()) {
                return "no table " + t;
            }
            parts.add(rows("SELECT column_name || ' ' || data_type || ' ' || is_nullable || ' '"
                    + " || COALESCE(column_default, '-') FROM information_schema.columns"
                    + " WHERE table_schema = current_schema() AND table_name = '" + t + "' ORDER BY ordinal_position"));
            parts.add(rows("SELECT tgname FROM pg_trigger WHERE tgrelid = '\"" + t + "\"'::regclass"
                    + " AND NOT tgisinternal ORDER BY tgname"));
            parts.add(rows("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                    + " AND tablename = '" + t + "' ORDER BY indexname"));
            parts.add(rows("SELECT COALESCE(array_to_string(reloptions, ','), '-') FROM pg_class"
                    + " WHERE oid = '\"" + t + "\"'::regclass"));
        } else {
            if (rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
                    + " AND table_name = '" + t + "'").isEmpty()) {
                return "no table " + t;
            }
            parts.add(rows("SHOW CREATE TABLE `" + t + "`", 2).replaceAll(" AUTO_INCREMENT=\\d+", ""));
            parts.add(rows("SELECT CONCAT_WS(' ', trigger_name, action_timing, event_manipulation)"
                    + " FROM information_schema.triggers WHERE trigger_schema = DATABASE()"
                    + " AND event_object_table = '" + t + "' ORDER BY trigger_name"));
        }
        return String.join("\n", parts);
    }

    private String rows(String sql) {
        return rows(sql, 1);
    }

    private String rows(String sql, int column) {
        try (Connection c = admin.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            List<String> lines = new ArrayList<>();
            while (rs.next()) {
                lines.add(rs.getString(column));
            }
            return String.join("\n", lines);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }
}
