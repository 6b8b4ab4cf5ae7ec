package dev.outbox.sidecar;

import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.spi.StoreException;
import dev.outbox.spring.OutboxConfigurationException;
import dev.outbox.spring.OutboxProperties;
import dev.outbox.spring.OutboxStoreProperties;
import dev.outbox.spring.OutboxStoreFactory;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.store.sql.SqlStore;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The sidecar's schema commands, for teams whose writers are not on the JVM and whose DBA creates the tables:
 * <ul>
 *   <li>{@code java -jar outbox-sidecar.jar schema --config outbox.yaml [--outbox NAME]} prints the DDL of each
 *       outbox (its tables and functions, and on Postgres with commit notifications the trigger that wakes the
 *       leader after a plain-SQL writer's commit), complete and runnable by {@code psql} or {@code mysql} as printed.
 *       It connects to nothing.</li>
 *   <li>{@code java -jar outbox-sidecar.jar init --config outbox.yaml [--outbox NAME]} applies the same DDL with the
 *       configured user, and says plainly when that user lacks the rights.</li>
 * </ul>
 * Stateless.
 */
final class SchemaCommand {
    /** Exit status when {@code init} could not create an outbox's schema. */
    static final int INIT_FAILED_EXIT = 3;

    private SchemaCommand() {
    }

    /**
     * The DDL of outbox {@code name} as {@code schema} prints it; connects to nothing.
     *
     * @throws SidecarConfigException naming a bad setting
     */
    static String ddl(String name, SidecarProperties.Outbox o) {
        String prefix = "sidecar.outboxes." + name;
        OutboxStoreProperties store = storeSettings(prefix, o);
        OutboxStoreFactory.Built built = build(NotConnecting.INSTANCE, prefix, store);
        StringBuilder out = new StringBuilder();
        out.append("-- Outbox '").append(name).append("' (").append(prefix).append("): ")
                .append(built.type().toString().toLowerCase(Locale.ROOT)).append(", table ").append(built.table())
                .append(".\n-- Run it in that outbox's database as a user that may create tables")
                .append(built.type() == OutboxProperties.StoreType.POSTGRES ? ", functions and triggers"
                        : built.type() == OutboxProperties.StoreType.MYSQL ? " and triggers" : "")
                .append(" there;\n-- it only creates what is missing, so it is safe to run again.\n");
        if (built.store() instanceof PostgresStore pg) {
            out.append(pg.schemaSql().strip()).append('\n');
            if (store.getWal().getUrl() != null) {
                out.append("\n-- The WAL harvest's functions (plain-SQL writers call ").append(pg.table())
                        .append("'s _emit function) and ledger:\n").append(pg.walSchemaSql().strip()).append('\n')
                        .append(pg.walLedgerSql().strip()).append(";\n")
                        .append("-- The replication slot and publication need a user with REPLICATION: `init`, or the"
                                + " sidecar at start with store.create-schema, creates them.\n");
            } else if (pg.notifyChannel().isPresent()) {
                out.append("\n-- Commit notifications for writers in other processes: after each statement that"
                        + " inserts into the outbox,\n-- the leader is told at once instead of at its next poll.\n")
                        .append(pg.notifyTriggerSql().strip()).append(";\n");
            }
        } else {
            out.append(((SqlStore) built.store()).schemaSql().strip()).append('\n');
            if (built.store() instanceof MySqlStore mysql) {
                out.append("\n-- The id guard: refuses an INSERT that sets the id (one compound statement).\n")
                        .append("DELIMITER //\n").append(mysql.idGuardSql()).append("\n//\nDELIMITER ;\n");
            }
        }
        optionTables((SqlStore) built.store(), store, out);
        return out.toString();
    }

    /**
     * The tables of the store options that are on (the ones {@code init} and {@code store.create-schema} create too):
     * the per-key sequence's counters, "not before"'s scheduled messages, the idempotency keys.
     */
    private static void optionTables(SqlStore sql, OutboxStoreProperties store, StringBuilder out) {
        if (store.isKeySequence()) {
            out.append("\n-- The per-key sequence's counters (store.key-sequence):\n")
                    .append(sql.keySequenceSchemaSql().strip()).append('\n');
        }
        if (store.isScheduling()) {
            out.append("\n-- Delayed messages wait here until they are due (store.scheduling); a writer in another"
                    + " language inserts\n-- into this table, with due_at, instead of the outbox:\n")
                    .append(sql.schedulingSchemaSql().strip()).append('\n');
        }
        if (store.getIdempotency().getRetention() != null) {
            out.append("\n-- The idempotency keys written within the retention (store.idempotency.retention); a"
                    + " writer in another\n-- language claims its key here before it inserts its row:\n")
                    .append(sql.idempotencySchemaSql().strip()).append('\n');
        }
    }

    /**
     * Runs {@code schema} or {@code init} over the outboxes of {@code p} ({@code only}: one outbox's name, or null for
     * all) and returns the exit status.
     */
    static int run(String command, SidecarProperties p, String only, Secrets secrets, PrintStream out,
                   PrintStream err) {
        List<Map.Entry<String, SidecarProperties.Outbox>> chosen = new ArrayList<>();
        for (Map.Entry<String, SidecarProperties.Outbox> e : p.getOutboxes().entrySet()) {
            if (only == null || only.equals(e.getKey())) {
                chosen.add(e);
            }
        }
        if (chosen.isEmpty()) {
            throw new SidecarConfigException(only == null ? "sidecar.outboxes" : "--outbox", only,
                    only == null ? "configure at least one outbox" : "no such outbox; configured: "
                            + p.getOutboxes().keySet(), null);
        }
        if (command.equals("schema")) {
            for (int i = 0; i < chosen.size(); i++) {
                if (i > 0) {
                    out.println();
                }
                out.print(ddl(chosen.get(i).getKey(), chosen.get(i).getValue()));
            }
            out.flush();
            return 0;
        }
        for (Map.Entry<String, SidecarProperties.Outbox> e : chosen) {
            String problem = init(e.getKey(), e.getValue(), secrets);
            if (problem != null) {
                err.println("outbox-sidecar: " + Redaction.redact(problem));
                err.flush();
                return INIT_FAILED_EXIT;
            }
            out.println("outbox-sidecar: the schema of outbox '" + e.getKey() + "' is ready");
        }
        out.flush();
        return 0;
    }

    /** Applies outbox {@code name}'s DDL; returns null, or what went wrong in one line. */
    private static String init(String name, SidecarProperties.Outbox o, Secrets secrets) {
        String prefix = "sidecar.outboxes." + name;
        OutboxStoreProperties store = storeSettings(prefix, o);
        try (HikariDataSource pool = Outboxes.pool(name, prefix + ".datasource", o.getDatasource(), secrets)) {
            OutboxStoreFactory.Built built = build(pool, prefix, store);
            try {
                built.createSchema().run();
                if (built.store() instanceof PostgresStore pg && pg.notifyChannel().isPresent()) {
                    try (Connection c = pool.getConnection(); var s = c.createStatement()) {
                        s.execute(pg.notifyTriggerSql());
                    }
                }
                return null;
            } catch (StoreException | SQLException e) {
                return "init of outbox '" + name + "' failed: " + explain(e, o.getDatasource().getUsername(), name);
            }
        }
    }

    /** Why applying the DDL failed; a missing right is said as such, with what to do. */
    static String explain(Throwable e, String user, String outbox) {
        SQLException sql = null;
        for (Throwable t = e; t != null && sql == null; t = t.getCause()) {
            if (t instanceof SQLException s) {
                sql = s;
            }
        }
        String state = sql == null ? null : sql.getSQLState();
        int code = sql == null ? 0 : sql.getErrorCode();
        // Postgres 42501 insufficient_privilege; MySQL 1044 (database), 1142 (table), 1227 (needs a privilege).
        if ("42501".equals(state) || code == 1044 || code == 1142 || code == 1227) {
            return "the user '" + user + "' may not create the outbox's objects (" + Outboxes.rootMessage(e)
                    + "). Have a user with the rights run the DDL that `java -jar outbox-sidecar.jar schema --config"
                    + " <file> --outbox " + outbox + "` prints, or grant CREATE on the schema (Postgres) or the"
                    + " database (MySQL) to '" + user + "'";
        }
        return Outboxes.rootMessage(e) + (state == null ? "" : " (SQLSTATE " + state + ")");
    }

    /** The outbox's store settings, its type taken from the JDBC URL when not set (the DDL must not need a login). */
    private static OutboxStoreProperties storeSettings(String prefix, SidecarProperties.Outbox o) {
        OutboxStoreProperties store = o.getStore();
        if (store.getType() == null) {
            String url = o.getDatasource().getUrl();
            if (url == null || url.isBlank()) {
                throw new SidecarConfigException(prefix + ".datasource.url", url, "set the JDBC URL of the outbox's"
                        + " database, e.g. jdbc:postgresql://db:5432/app or jdbc:mysql://db:3306/app", null);
            }
            String u = url.toLowerCase(Locale.ROOT);
            if (u.startsWith("jdbc:postgresql:")) {
                store.setType(OutboxProperties.StoreType.POSTGRES);
            } else if (u.startsWith("jdbc:mysql:") || u.startsWith("jdbc:mariadb:")) {
                store.setType(OutboxProperties.StoreType.MYSQL);
            } else {
                throw new SidecarConfigException(prefix + ".store.type", null, "not set, and the JDBC URL names"
                        + " no database with an outbox store: set it to postgres or mysql", null);
            }
        }
        return store;
    }

    private static OutboxStoreFactory.Built build(DataSource dataSource, String prefix, OutboxStoreProperties store) {
        try {
            return OutboxStoreFactory.build(dataSource, prefix + ".store", store);
        } catch (OutboxConfigurationException e) {
            throw new SidecarConfigException(e.property(), null, e.getMessage(), e);
        }
    }

    /** A data source for the DDL alone: building a store does not connect, and nothing here may. */
    private enum NotConnecting implements DataSource {
        INSTANCE;

        @Override
        public Connection getConnection() throws SQLException {
            throw new SQLException("the schema command does not connect to the database");
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}
