package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;

import java.util.Objects;

/**
 * What one database differs in where the stores' algorithms are the same, held as data: its rules for table
 * names, the resource with its DDL template, how its errors are classified and the default longest key. The
 * statements that really differ (marking, parking) stay in each store. Immutable and thread-safe.
 *
 * @param tableNames          identifier length limit, quote character and product name
 * @param schemaResource      class-path resource of the DDL template, with {@code ${outbox}} and {@code ${parked}}
 *                            standing for the quoted table names
 * @param errors              which failures are retriable, and how messages name them
 * @param defaultMaxKeyLength the longest key, in code points, a store of this database accepts by default
 */
public record SqlDialect(SqlTableNames.Dialect tableNames, String schemaResource, SqlErrors errors,
                         int defaultMaxKeyLength) {

    public SqlDialect {
        Objects.requireNonNull(tableNames, "tableNames must not be null");
        Objects.requireNonNull(schemaResource, "schemaResource must not be null");
        Objects.requireNonNull(errors, "errors must not be null");
        if (defaultMaxKeyLength < 1) {
            throw new IllegalArgumentException("defaultMaxKeyLength must be at least 1: " + defaultMaxKeyLength);
        }
    }
}
