package dev.outbox.store.postgres;

import dev.outbox.OutboxShards;
import dev.outbox.spi.SqlTableNames;
import org.jdbi.v3.core.Handle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.UnaryOperator;

/**
 * Postgres' DDL for one outbox: what the schema template's placeholders stand for (the message-id function, the
 * shard column), the in-place upgrades of tables of earlier versions, and the change of a table's shard count.
 * DDL is transactional in Postgres: the store applies it in one transaction under an advisory lock. Stateless.
 */
final class PostgresSchema {
    private static final Logger log = LoggerFactory.getLogger(PostgresStore.class);
    /** Serializes concurrent schema creators: {@code CREATE TABLE IF NOT EXISTS} races otherwise. */
    private static final long SCHEMA_LOCK_KEY = 0x6F7574626F78L; // "outbox"

    private PostgresSchema() {
    }

    /** The message-id function of the outbox's schema, qualified if a schema is set. */
    static String uuidv7(SqlTableNames names) {
        // The schema name was validated ([a-z_][a-z0-9_]*), so quoting it is enough.
        return (names.schema() == null ? "" : '"' + names.schema() + "\".") + PostgresStore.UUIDV7_FUNCTION;
    }

    /** The id guard function of the outbox's schema (see schema.sql), qualified if a schema is set. */
    static String idGuard(SqlTableNames names) {
        return (names.schema() == null ? "" : '"' + names.schema() + "\".") + PostgresStore.ID_GUARD_FUNCTION;
    }

    /**
     * Applies {@code ddl} on the handle's transaction under an advisory lock, then the upgrades a table of an
     * earlier version needs: each statement only changes the catalog, so writers and dispatchers carry on.
     *
     * @param render renders a DDL resource of this package with the store's names
     */
    static void apply(Handle handle, String ddl, SqlTableNames names, UnaryOperator<String> render)
            throws SQLException {
        handle.createQuery("SELECT pg_advisory_xact_lock(?)").bind(0, SCHEMA_LOCK_KEY).mapTo(String.class).one();
        try (Statement statement = handle.getConnection().createStatement()) {
            statement.execute(ddl);
        }
        boolean upgrade = handle.createQuery("SELECT count(*) FROM pg_attribute WHERE attname = 'message_id'"
                        + " AND NOT attisdropped AND attrelid IN (to_regclass(?), to_regclass(?))")
                .bind(0, names.outbox()).bind(1, names.parked()).mapTo(Integer.class).one() < 2;
        if (upgrade) {
            log.info("Adding the message_id column to {} and {}", names.outbox(), names.parked());
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(render.apply(PostgresStore.UPGRADE_RESOURCE));
            }
        }
        boolean noNextAttempt = handle.createQuery("SELECT count(*) FROM pg_attribute WHERE attname ="
                        + " 'next_attempt_at' AND NOT attisdropped AND attrelid = to_regclass(?)")
                .bind(0, names.outbox()).mapTo(Integer.class).one() == 0;
        if (noNextAttempt) {
            log.info("Adding the next_attempt_at column to {}", names.outbox());
            try (Statement statement = handle.getConnection().createStatement()) {
                statement.execute(render.apply(PostgresStore.UPGRADE_NEXT_ATTEMPT_RESOURCE));
            }
        }
    }

    /**
     * Fills in the message-id function, {@code ${uuidv7}}, the id guard, {@code ${idGuard}}, and the shard column and
     * index for a sharded outbox.
     */
    static String fillIn(String sql, SqlTableNames names, int shardCount) {
        String filled = sql.replace("${uuidv7}", uuidv7(names)).replace("${idGuard}", idGuard(names));
        if (shardCount == 1) {
            return filled.replace("${shardColumn}", "").replace("${leaderIds}", "id = 1");
        }
        return filled.replace("${shardColumn}", "    ,shard integer GENERATED ALWAYS AS (" + shardSql("key", shardCount)
                        + ") STORED -- OutboxShards.shardOf(key, " + shardCount + "): the row's shard\n")
                .replace("${leaderIds}", "id >= 0")
                + "\n\n-- Sharded harvest: each shard's leader walks its rows in id order through this index (mark, read,"
                + "\n-- backlog, oldest create time all filter on shard = <i>). A table created without the column is"
                + "\n-- left as it is: the store refuses it, naming both shard counts.\nDO $$\nBEGIN\n    IF EXISTS"
                + " (SELECT FROM pg_attribute WHERE attrelid = CAST('" + names.outbox() + "' AS regclass)"
                + " AND attname = 'shard' AND NOT attisdropped) THEN\n        CREATE INDEX IF NOT EXISTS \""
                + names.table() + "_shard\" ON " + names.outbox() + " (shard, id);\n    END IF;\nEND\n$$;\n";
    }

    /** See {@link PostgresStore#reshardSql(int)}. */
    static String reshardSql(SqlTableNames names, int fromShards, int shardCount) {
        OutboxShards.checkCount(fromShards);
        String t = names.outbox();
        String l = names.leader();
        StringBuilder sql = new StringBuilder("ALTER TABLE " + t + " DROP COLUMN IF EXISTS shard;\n");
        if (shardCount > 1) {
            sql.append("ALTER TABLE ").append(t).append(" ADD COLUMN shard integer GENERATED ALWAYS AS (")
                    .append(shardSql("key", shardCount)).append(") STORED;\n")
                    .append("CREATE INDEX IF NOT EXISTS \"").append(names.table()).append("_shard\" ON ").append(t)
                    .append(" (shard, id);\n");
        } else {
            sql.append("DELETE FROM ").append(l).append(" WHERE id <> 1;\n");
        }
        return sql.append("DO $$\nDECLARE\n    c name;\nBEGIN\n    FOR c IN SELECT conname FROM pg_constraint")
                .append(" WHERE conrelid = CAST('").append(l).append("' AS regclass) AND contype = 'c' LOOP\n")
                .append("        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', '").append(l)
                .append("', c);\n    END LOOP;\nEND\n$$;\n")
                .append("ALTER TABLE ").append(l).append(" ADD CHECK (").append(shardCount > 1 ? "id >= 0" : "id = 1")
                .append(");\n").toString();
    }

    /**
     * The Postgres expression of {@link OutboxShards#shardOf}{@code (key, count)} for a text column or value
     * {@code key}: its md5's first 8 hex digits read as an unsigned 32-bit integer, modulo {@code count}.
     * {@code md5(text)} hashes the text's bytes in the database's encoding, which must be UTF-8 for the two to agree.
     */
    static String shardSql(String key, int count) {
        return "CAST(CAST(CAST('x' || substr(md5(" + key + "), 1, 8) AS bit(32)) AS bigint) % " + count
                + " AS integer)";
    }
}
