package dev.outbox.store.sql;

import dev.outbox.OutboxShards;
import dev.outbox.spi.StoreException;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The third of {@link SqlStore}'s layers: its schema — the DDL of its tables and of the options that are on, the
 * templates it is rendered from, creating the schema and changing the table's shard count, which
 * {@link SqlSchemaScripts} runs — and the two steps each database writes itself ({@link #createTables},
 * {@link #reshardSql}). Its public and protected members are {@link SqlStore}'s; package-private so that only
 * {@link SqlStore} is the API. Immutable and thread-safe.
 */
abstract class SqlStoreSchema extends SqlShardViews {
    private final SqlSchemaScripts schema;

    /** {@link SqlStore}'s constructor says what it takes and throws. */
    SqlStoreSchema(SqlStoreBuilder<?, ?> builder, int shardIndex, Function<SqlTable, SqlStatements> statements) {
        super(builder, shardIndex, statements);
        List<SqlSchemaScripts.SideTable> sideTables = new ArrayList<>();
        if (keySequence()) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlKeySequence.RESOURCE, SqlKeySequence.table(names)));
        }
        if (idempotency().isOn()) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlIdempotency.RESOURCE, SqlIdempotency.table(names)));
        }
        if (scheduling()) {
            sideTables.add(new SqlSchemaScripts.SideTable(SqlScheduling.RESOURCE, SqlScheduling.table(names)));
        }
        this.schema = new SqlSchemaScripts(getClass(), sqlTable(), dialect().schemaResource(), sideTables,
                shardState(), log, new SqlSchemaScripts.Ddl(this::fillIn, this::createTables, this::reshardSql));
    }

    /**
     * The DDL for this store's tables (the {@code schema.sql} resource of the store's package), with the
     * configured names filled in. Idempotent: it only creates what does not exist yet.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String schemaSql() {
        return schema.schemaSql();
    }

    /**
     * A DDL template of the store's class path ({@code resource}) with the configured names filled in: the tables'
     * ({@code ${outbox}}, {@code ${parked}}, {@code ${leader}}) and the store's own ({@link #fillIn}).
     *
     * @param resource the template's class-path resource, read through the store class's class loader
     * @return the DDL, names filled in
     * @throws IllegalStateException if the resource is missing
     * @throws UncheckedIOException  if it cannot be read
     */
    protected final String render(String resource) {
        return schema.render(resource);
    }

    /**
     * Fills in what else a store's DDL templates stand for (its own placeholders, such as the message-id function);
     * default: nothing.
     *
     * @param sql a template with the table names already filled in
     * @return the DDL with the store's own placeholders filled in
     */
    protected String fillIn(String sql) {
        return sql;
    }

    /**
     * Creates the outbox table and its parked table if they do not exist yet ({@link #schemaSql()}), and the tables of
     * the options that are on: the key sequence's counters ({@link SqlStore.Builder#keySequence},
     * {@link #keySequenceSchemaSql()}), the idempotency keys ({@link SqlStore.Builder#idempotencyKeys},
     * {@link #idempotencySchemaSql()}) and the scheduled messages ({@link SqlStore.Builder#scheduling},
     * {@link #schedulingSchemaSql()}). Safe to call from several processes at once and on every start-up; it never
     * changes a table that exists already.
     *
     * @throws StoreException if the DDL fails, for example for lack of privileges
     */
    public final void createSchema() {
        schema.create();
    }

    /**
     * The DDL of the key sequence's counter table, {@code <table>_key_seq} (the {@code key-sequence.sql} resource
     * next to the store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when the key
     * sequence is on ({@link SqlStore.Builder#keySequence}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String keySequenceSchemaSql() {
        return schema.sideTableSql(SqlKeySequence.RESOURCE);
    }

    /**
     * The DDL of the idempotency keys' table, {@code <table>_idempotency} (the {@code idempotency.sql} resource next
     * to the store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when idempotency keys
     * are on ({@link SqlStore.Builder#idempotencyKeys}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String idempotencySchemaSql() {
        return schema.sideTableSql(SqlIdempotency.RESOURCE);
    }

    /**
     * The DDL of the scheduled table, {@code <table>_scheduled} (the {@code scheduling.sql} resource next to the
     * store's {@code schema.sql}), names filled in; {@link #createSchema()} applies it when scheduling is on
     * ({@link SqlStore.Builder#scheduling}). Idempotent.
     *
     * @return the DDL; statements separated by {@code ;}
     */
    public final String schedulingSchemaSql() {
        return schema.sideTableSql(SqlScheduling.RESOURCE);
    }

    /**
     * The DDL that makes an existing outbox table one of this store's shard count ({@link SqlStore.Builder#shards}): it
     * replaces the generated {@code shard} column (and its index) with one for this count, or drops it for 1 shard,
     * and lets the leader table hold one epoch row per shard. Changing the count moves most keys to another shard,
     * so run it only while no dispatcher of this outbox runs (README, "Sharded harvest"); the statements are
     * separated by {@code ;} at the end of a line. It rewrites the table (a generated column is stored).
     *
     * @param fromShards the count the table is made for now (1 if it has no {@code shard} column)
     * @return the DDL, names filled in
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link OutboxShards#MAX_SHARDS}
     */
    public abstract String reshardSql(int fromShards);

    /**
     * Runs {@link #reshardSql(int)} from the count the table is made for now (in one transaction where the
     * database's DDL is transactional, Postgres), then {@link #checkShards()}. Only while no dispatcher of this
     * outbox runs: one that still runs with the former count would harvest the keys that moved as a second leader.
     *
     * @throws StoreException if the DDL fails
     */
    public final void reshard() {
        schema.reshard();
    }

    /**
     * Runs {@code ddl}, this store's {@link #schemaSql()}, so that concurrent callers do not trip over each other.
     *
     * @param ddl the DDL to run: {@link #schemaSql()}, or {@link #reshardSql} for {@link #reshard()}
     * @throws StoreException if the DDL fails
     */
    protected abstract void createTables(String ddl);
}
