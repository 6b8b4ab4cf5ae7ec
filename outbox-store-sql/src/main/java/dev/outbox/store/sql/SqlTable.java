package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;

import java.time.Duration;
import java.util.Objects;

/**
 * The table a store's statements are written for: its names, the shard a view sees (or none) and the settings its
 * statements carry; what a dialect writes its {@link SqlStatements} from. Immutable and thread-safe.
 *
 * @param names            the validated, quoted names of the outbox, parked and leader tables
 * @param shard            the shard a view sees, or -1 for the whole outbox
 * @param shards           the outbox's shard count
 * @param statementTimeout the longest a statement may take
 */
public record SqlTable(SqlTableNames names, int shard, int shards, Duration statementTimeout) {

    /**
     * Checks the components.
     *
     * @param names            the table names; not null
     * @param shard            the shard a view sees, or -1
     * @param shards           the shard count
     * @param statementTimeout the statement timeout; not null
     * @throws NullPointerException if {@code names} or {@code statementTimeout} is null
     */
    public SqlTable {
        Objects.requireNonNull(names, "names must not be null");
        Objects.requireNonNull(statementTimeout, "statementTimeout must not be null");
    }

    /**
     * Whether this is the view of one shard.
     *
     * @return true if {@link #shard()} is 0 or more
     */
    public boolean isShard() {
        return shard >= 0;
    }

    /**
     * The leader table's row this table's epoch lives in.
     *
     * @return 1 for an unsharded outbox, 0 for the whole of a sharded one, {@code shard + 1} for a shard's view
     */
    public int leaderRow() {
        return shard >= 0 ? shard + 1 : shards > 1 ? 0 : 1;
    }

    /**
     * The outbox table in SQL.
     *
     * @return the quoted, possibly schema-qualified name
     */
    public String outbox() {
        return names.outbox();
    }

    /**
     * The parked table in SQL.
     *
     * @return the quoted, possibly schema-qualified name
     */
    public String parked() {
        return names.parked();
    }

    /**
     * The leader table in SQL.
     *
     * @return the quoted, possibly schema-qualified name
     */
    public String leader() {
        return names.leader();
    }

    /**
     * {@code 'text'}: a SQL string literal of a validated name (names match {@code [a-z_][a-z0-9_]*}, quoted with
     * {@code "} or a backtick), so that catalog queries need no parameter.
     *
     * @param text the name; not null
     * @return {@code text} between single quotes
     * @throws IllegalArgumentException if {@code text} holds a single quote or a backslash
     */

    public static String literal(String text) {
        if (text.indexOf('\'') >= 0 || text.indexOf('\\') >= 0) {
            throw new IllegalArgumentException("not a validated name: " + text);
        }
        return "'" + text + "'";
    }
}
