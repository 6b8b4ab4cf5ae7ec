package dev.outbox.store.mysql;

import dev.outbox.OutboxShards;
import dev.outbox.spi.SqlTableNames;
import dev.outbox.store.sql.SqlTransactions;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * MySQL's and MariaDB's DDL for one outbox: what the schema template's placeholders stand for (the message-id
 * expression, the shard column), the in-place upgrades of tables of earlier versions, and the change of a table's
 * shard count. DDL commits implicitly here, so the tables are created one after the other, each atomically, under a
 * named lock. Stateless.
 */
final class MySqlSchema {
    private static final Logger log = LoggerFactory.getLogger(MySqlStore.class);

    private MySqlSchema() {
    }

    /**
     * Runs {@code ddl}, split into statements at {@code ;} ending a line, then the upgrades a table of an earlier
     * version needs, under a named lock that serializes concurrent creators.
     *
     * @param render  renders a DDL resource of this package with the store's names
     * @param idGuard the id guard's DDL, created last (see {@link #createIdGuard})
     */
    static void apply(SqlTransactions tx, SqlTableNames names, String ddl, UnaryOperator<String> render,
                      String idGuard) {
        List<String> statements = statements(ddl);
        tx.withHandle("creating the outbox schema for " + names.outbox(), handle -> {
            // Serializes concurrent creators (CREATE TABLE IF NOT EXISTS is safe anyway; this keeps the log quiet).
            // Lock names are limited to 64 characters: a hash of the table names stands for them.
            String lock = "dev.outbox.schema." + Integer.toHexString(names.outbox().hashCode());
            handle.createQuery("SELECT GET_LOCK(?, ?)").bind(0, lock).bind(1, tx.queryTimeoutSeconds())
                    .mapTo(Integer.class).one();
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.setQueryTimeout(tx.queryTimeoutSeconds());
                for (String sql : statements) {
                    statement.execute(sql);
                }
                if (columns(tx, handle, names, "IN (?, ?)", "message_id") < 2) {
                    log.info("Adding the message_id column to {} and {}", names.outbox(), names.parked());
                    for (String sql : statements(render.apply(MySqlStore.UPGRADE_RESOURCE))) {
                        statement.execute(sql);
                    }
                }
                if (columns(tx, handle, names, "= ?", "next_attempt_at") == 0) {
                    log.info("Adding the next_attempt_at column to {}", names.outbox());
                    for (String sql : statements(render.apply(MySqlStore.UPGRADE_NEXT_ATTEMPT_RESOURCE))) {
                        statement.execute(sql);
                    }
                }
                createIdGuard(statement, names, idGuard);
            } finally {
                handle.createQuery("SELECT RELEASE_LOCK(?)").bind(0, lock).mapTo(Integer.class).one();
            }
            return null;
        });
    }

    /**
     * Creates the id guard unless it exists. A server that refuses the trigger for lack of a privilege (error 1419:
     * binary logging is on and the user has neither SUPER nor {@code log_bin_trust_function_creators}; 1142 / 1227:
     * no TRIGGER privilege) leaves the tables as they are, usable, and the refusal is logged at WARN with what to do:
     * an outbox created before the guard keeps working after an upgrade, unguarded until a user who may creates it.
     */
    private static void createIdGuard(Statement statement, SqlTableNames names, String idGuard) throws SQLException {
        try {
            statement.execute(idGuard);
        } catch (SQLException e) {
            if (e.getErrorCode() != 1419 && e.getErrorCode() != 1142 && e.getErrorCode() != 1227) {
                throw e;
            }
            log.warn("The id guard of {} was not created ({}): the database accepts an INSERT that sets the id, which"
                    + " breaks the harvest (a negative id is never published). Create it as a user who may create"
                    + " triggers: MySqlStore.idGuardSql()", names.outbox(), e.getMessage());
        }
    }

    /** The name of the id guard of {@code names}' outbox table: {@code <table>_ids}, quoted and qualified like it. */
    static String idGuardName(SqlTableNames names) {
        String outbox = names.outbox();
        return outbox.substring(0, outbox.length() - 1) + "_ids`";
    }

    /** How many of the outbox table (and, for {@code IN (?, ?)}, its parked table) have the column. */
    private static int columns(SqlTransactions tx, Handle handle, SqlTableNames names, String tables, String column) {
        var query = tx.timed(handle.createQuery("SELECT COUNT(*) FROM information_schema.columns"
                + " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name " + tables
                + " AND column_name = '" + column + "'")).bind(0, names.schema()).bind(1, names.table());
        if (tables.startsWith("IN")) {
            query.bind(2, names.parkedTable());
        }
        return query.mapTo(Integer.class).one();
    }

    /** {@code script} as one statement: comment lines dropped, no {@code ;} after it. */
    static String withoutComments(String script) {
        StringBuilder sql = new StringBuilder();
        for (String line : script.split("\n")) {
            if (!line.strip().startsWith("--") && !line.isBlank()) {
                sql.append(line).append('\n');
            }
        }
        String statement = sql.toString().strip();
        return statement.endsWith(";") ? statement.substring(0, statement.length() - 1) : statement;
    }

    /** The statements of {@code script}: comment lines dropped, split at {@code ;} ending a line. */
    static List<String> statements(String script) {
        StringBuilder current = new StringBuilder();
        List<String> statements = new ArrayList<>();
        for (String line : script.split("\n")) {
            String trimmed = line.strip();
            if (trimmed.startsWith("--") || trimmed.isEmpty()) {
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                String sql = current.toString().strip();
                statements.add(sql.substring(0, sql.length() - 1));
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        return statements;
    }

    /**
     * Fills in the message-id expression, {@code ${uuidv7}}, the id guard's name, {@code ${idGuard}}, and a sharded
     * outbox's shard column and index.
     */
    static String fillIn(String sql, SqlTableNames names, int shardCount) {
        String filled = sql.replace("${uuidv7}", MySqlStore.UUIDV7_EXPRESSION).replace("${idGuard}", idGuardName(names));
        if (shardCount == 1) {
            return filled;
        }
        String nextAttempt = "    next_attempt_at TIMESTAMP(6) NULL DEFAULT NULL,     -- set by a failed delivery: not"
                + " retried before this time\n";
        String leaderId = "    id          TINYINT       NOT NULL,                 -- always 1\n";
        if (!filled.contains(nextAttempt) || !filled.contains(leaderId)) {
            return filled; // another template (an upgrade): nothing to add
        }
        // The shard column and its index are part of the CREATE TABLE: a table created without them is left as it
        // is, and the store refuses it, naming both shard counts.
        return filled.replace(nextAttempt, nextAttempt + "    shard       SMALLINT      AS (" + shardSql("`key`",
                        shardCount) + ") STORED, -- OutboxShards.shardOf(key, " + shardCount + ")\n"
                        + "    KEY `" + names.table() + "_shard` (shard, id), -- each shard's harvest walks it in id"
                        + " order\n")
                .replace(leaderId, "    id          SMALLINT      NOT NULL,                 -- 0: the whole outbox;"
                        + " 1 + i: shard i\n");
    }

    /** See {@link MySqlStore#reshardSql(int)}. */
    static String reshardSql(SqlTableNames names, int fromShards, int shardCount) {
        OutboxShards.checkCount(fromShards);
        String t = names.outbox();
        String l = names.leader();
        String index = "`" + names.table() + "_shard`";
        // MySQL 8 has no DROP COLUMN IF EXISTS: the caller says whether the table has the column.
        StringBuilder sql = new StringBuilder();
        if (fromShards > 1) {
            sql.append("ALTER TABLE ").append(t).append(" DROP INDEX ").append(index).append(", DROP COLUMN shard;\n");
        }
        if (shardCount > 1) {
            sql.append("ALTER TABLE ").append(t).append(" ADD COLUMN shard SMALLINT AS (")
                    .append(shardSql("`key`", shardCount)).append(") STORED, ADD KEY ")
                    .append(index).append(" (shard, id);\n")
                    .append("ALTER TABLE ").append(l).append(" MODIFY id SMALLINT NOT NULL;\n");
        } else {
            sql.append("DELETE FROM ").append(l).append(" WHERE id <> 1;\n");
        }
        return sql.toString();
    }

    /**
     * The MySQL and MariaDB expression of {@link OutboxShards#shardOf}{@code (key, count)} for a string column or
     * value {@code key}: its md5's first 8 hex digits read as an unsigned 32-bit integer, modulo {@code count}.
     * {@code MD5} hashes the string's bytes in its character set, utf8mb4 in the outbox table.
     */
    static String shardSql(String key, int count) {
        return "CAST(CONV(SUBSTR(MD5(" + key + "), 1, 8), 16, 10) AS UNSIGNED) % " + count;
    }
}
