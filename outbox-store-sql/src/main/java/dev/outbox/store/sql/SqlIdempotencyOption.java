package dev.outbox.store.sql;

import dev.outbox.spi.SqlTableNames;

/** Builds a store's {@link SqlIdempotency} from its builder's settings ({@link SqlStoreBuilder#idempotencyKeys}). */
final class SqlIdempotencyOption {
    private SqlIdempotencyOption() {
    }

    /**
     * The store's idempotency keys: off if the builder did not turn them on, else on with the store's statements.
     *
     * @throws IllegalStateException if the store keeps no idempotency keys, or the table name leaves no room
     */
    static SqlIdempotency of(SqlStoreBuilder<?, ?> builder, SqlStoreSettings store, SqlTableNames names) {
        if (builder.idempotencyRetention == null) {
            return SqlIdempotency.off();
        }
        SqlIdempotency.checkTableLength(builder.dialect.tableNames(), names.table());
        String table = SqlIdempotency.table(names);
        SqlIdempotency.Statements statements = store.idempotencyStatements(table);
        if (statements == null) {
            throw new IllegalStateException(store.getClass().getSimpleName() + " does not keep idempotency keys:"
                    + " build it without idempotencyKeys(" + builder.idempotencyRetention + ")");
        }
        return SqlIdempotency.on(statements, builder.idempotencyRetention, builder.onDuplicate,
                builder.dialect.errors(), table);
    }
}
