package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;

import java.util.Objects;

/**
 * What one database differs in where the stores' algorithms are the same, held as data: its rules for table
 * names, the resource with its DDL template, how its errors are classified, the default longest key, how it binds
 * batches of ids and its typed columns, and how its statements are bounded in time. Its statements are
 * {@link SqlStatements}, written per table by the store. Immutable and thread-safe.
 *
 * @param tableNames          identifier length limit, quote character and product name
 * @param schemaResource      class-path resource of the DDL template, with {@code ${outbox}} and {@code ${parked}}
 *                            standing for the quoted table names
 * @param errors              which failures are retriable, and how messages name them
 * @param defaultMaxKeyLength the longest key, in code points, a store of this database accepts by default
 * @param ids                 how batches of ids are bound: arrays or {@code IN} lists
 * @param columns             how UUIDs, times and headers are bound and read
 * @param queryTimeouts       whether every statement carries the statement timeout as a JDBC query timeout (else the
 *                            transaction's prologue sets a timeout of the database's own)
 */
public record SqlDialect(SqlTableNames.Dialect tableNames, String schemaResource, SqlErrors errors,
                         int defaultMaxKeyLength, IdBinding ids, SqlColumns columns, boolean queryTimeouts) {

    /**
     * Checks the components; see the record's description for each.
     *
     * @param tableNames          identifier rules; not null
     * @param schemaResource      the DDL template's class-path resource; not null
     * @param errors              the error classification; not null
     * @param defaultMaxKeyLength the default longest key in code points, at least 1
     * @param ids                 the id binding; not null
     * @param columns             the typed columns' binding; not null
     * @param queryTimeouts       whether statements carry a JDBC query timeout
     * @throws NullPointerException     if an object component is null
     * @throws IllegalArgumentException if {@code defaultMaxKeyLength} is below 1
     */

    public SqlDialect {

        Objects.requireNonNull(tableNames, "tableNames must not be null");
        Objects.requireNonNull(schemaResource, "schemaResource must not be null");
        Objects.requireNonNull(errors, "errors must not be null");
        Objects.requireNonNull(ids, "ids must not be null");
        Objects.requireNonNull(columns, "columns must not be null");
        if (defaultMaxKeyLength < 1) {
            throw new IllegalArgumentException("defaultMaxKeyLength must be at least 1: " + defaultMaxKeyLength);
        }
    }
}
