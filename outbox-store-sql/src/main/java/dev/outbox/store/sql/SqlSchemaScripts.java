package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;
import org.slf4j.Logger;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;

/**
 * A SQL store's schema: its DDL templates (the dialect's {@code schema.sql} and, next to it, the key sequence's
 * {@value SqlKeySequence#RESOURCE}) read from the store class's class path with the table names and the store's own
 * placeholders filled in, and the two scripts a store runs — creating what does not exist yet ({@link #create()}) and
 * changing the outbox table's shard count ({@link #reshard()}), each followed by the shard check. What differs by
 * database (the fill-in, how DDL runs, what a reshard is) comes from the store ({@link Ddl}); what runs, in which
 * order, is here. The {@link SqlStore} methods of the same names delegate to it. Immutable and thread-safe.
 */
final class SqlSchemaScripts {
    /**
     * The store's database-specific schema steps: its methods {@code fillIn}, {@code createTables} and
     * {@code reshardSql}.
     *
     * @param fillIn     fills in a template's store-specific placeholders, after the table names
     * @param apply      runs DDL so that concurrent callers do not trip over each other
     * @param reshardSql the DDL that makes the table one of the store's shard count, from the count given
     */
    record Ddl(UnaryOperator<String> fillIn, Consumer<String> apply, IntFunction<String> reshardSql) {
    }

    /**
     * A table an option of the store adds beside the outbox (the key sequence's counters, the idempotency keys, the
     * scheduled messages): its DDL template's resource name, next to {@code schema.sql}, and its name, for the log.
     *
     * @param resource the template's file name, for example {@value SqlKeySequence#RESOURCE}
     * @param table    the table's name
     */
    record SideTable(String resource, String table) {
    }

    private final Class<?> owner;
    private final SqlTableNames names;
    private final int shardCount;
    private final String schemaResource;
    private final List<SideTable> sideTables;
    private final SqlShards shards;
    private final Logger log;
    private final Ddl ddl;

    /**
     * @param owner          the store's class, whose class loader reads the templates
     * @param table          the store's table names and shard count
     * @param schemaResource the dialect's {@code schema.sql} resource
     * @param sideTables     the tables of the options that are on, which {@link #create()} adds after the outbox's
     * @param shards         the shard check run after each script
     * @param log            the store's logger, which reports each script
     * @param ddl            the store's own steps
     */
    SqlSchemaScripts(Class<?> owner, SqlTable table, String schemaResource, List<SideTable> sideTables,
                     SqlShards shards, Logger log, Ddl ddl) {
        this.owner = owner;
        this.names = table.names();
        this.shardCount = table.shards();
        this.schemaResource = schemaResource;
        this.sideTables = List.copyOf(sideTables);
        this.shards = shards;
        this.log = log;
        this.ddl = Objects.requireNonNull(ddl, "ddl");
    }

    /** {@link SqlStore#schemaSql()}: the dialect's {@code schema.sql}, rendered. */
    String schemaSql() {
        return render(schemaResource);
    }

    /**
     * The DDL of an option's table: the template {@code resource} next to {@code schema.sql}, rendered
     * ({@link SqlStore#keySequenceSchemaSql()}, {@link SqlStore#idempotencySchemaSql()}).
     */
    String sideTableSql(String resource) {
        return render(schemaResource.substring(0, schemaResource.lastIndexOf('/') + 1) + resource);
    }

    /** {@link SqlStore#render}: a template with the table names, then the store's own placeholders, filled in. */
    String render(String resource) {
        String template = resource(owner, resource);
        return ddl.fillIn().apply(template.replace("${outbox}", names.outbox()).replace("${parked}", names.parked())
                .replace("${leader}", names.leader()).replace("${keySeq}", SqlKeySequence.table(names))
                .replace("${idempotency}", SqlIdempotency.table(names))
                .replace("${scheduled}", SqlScheduling.table(names))
                .replace("${scheduledDueIndex}", SqlScheduling.index(names, "due"))
                .replace("${scheduledKeyIndex}", SqlScheduling.index(names, "key")));
    }

    /**
     * {@link SqlStore#createSchema()}: the schema, with the tables of the options that are on, then the shard check.
     */
    void create() {
        StringBuilder sql = new StringBuilder(schemaSql());
        StringBuilder tables = new StringBuilder();
        for (SideTable t : sideTables) {
            sql.append('\n').append(sideTableSql(t.resource()));
            tables.append(" and ").append(t.table());
        }
        ddl.apply().accept(sql.toString());
        shards.check();
        log.info("Outbox schema ready: {} and {}{}", names.outbox(), names.parked(), tables);
    }

    /** {@link SqlStore#reshard()}: the reshard DDL from the table's count now, then the shard check read anew. */
    void reshard() {
        ddl.apply().accept(ddl.reshardSql().apply(shards.tableShards()));
        shards.forget();
        shards.check();
        log.info("{} resharded to {} shard(s)", names.outbox(), shardCount);
    }

    /**
     * A text resource of {@code owner}'s class path (a DDL template), read through its class loader as UTF-8.
     *
     * @param owner    the class whose class loader reads it: the store's own class
     * @param resource the class-path resource
     * @return its text
     * @throws IllegalStateException if the resource is missing
     * @throws UncheckedIOException  if it cannot be read
     */
    static String resource(Class<?> owner, String resource) {
        try (InputStream in = owner.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("resource " + resource + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + resource, e);
        }
    }
}
