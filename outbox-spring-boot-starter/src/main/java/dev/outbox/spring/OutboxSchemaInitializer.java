package dev.outbox.spring;

import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.store.sql.SqlStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * Readies the outbox tables once the application's own migrations have run: the starter declares it
 * {@code @DependsOnDatabaseInitialization}, so Spring Boot creates it after Flyway, Liquibase and SQL initialization,
 * and the publisher and the dispatcher depend on it. It then
 * <ol>
 * <li>creates the outbox tables if {@code outbox.store.create-schema=true} (idempotent). Running after the
 *     migrations matters: Flyway refuses to baseline a new database in which the outbox tables were created
 *     first ("non-empty schema … but no schema history table");</li>
 * <li>checks that the outbox table is made for the store's shard count ({@code outbox.store.shards}), so that a
 *     store configured for 4 shards over an unsharded table stops start-up naming both counts instead of
 *     starting, reporting UP and publishing nothing.</li>
 * </ol>
 * A database that cannot be reached at start-up is not a configuration error: the check is then left to the
 * dispatcher, which makes it before its first harvest. Thread-safe (immutable once constructed).
 */
public final class OutboxSchemaInitializer {
    private static final Logger log = LoggerFactory.getLogger(OutboxSchemaInitializer.class);
    private static final boolean SQL_STORE = ClassUtils.isPresent("dev.outbox.store.sql.SqlStore",
            OutboxSchemaInitializer.class.getClassLoader());

    /**
     * @param store        the outbox's store (the starter's, or the application's own {@code Store} bean)
     * @param createSchema creates the tables of the starter's store, or null (the application defined its store, or
     *                     {@code create-schema} is off)
     * @param property     the shard-count property to name, e.g. {@code outbox.store.shards}
     * @throws OutboxConfigurationException if the tables cannot be created, or the table's shard count is not the
     *                                      store's (naming both)
     */
    public OutboxSchemaInitializer(Store store, Runnable createSchema, String property) {
        String prefix = property.substring(0, property.lastIndexOf('.'));
        if (createSchema != null) {
            try {
                createSchema.run();
            } catch (RuntimeException e) {
                throw new OutboxConfigurationException(prefix + ".create-schema", "the outbox tables could not be"
                        + " created: " + oneLine(e), "grant the application's database user the right to create"
                        + " them, or create them with your migrations and set " + prefix + ".create-schema=false", e);
            }
        }
        if (SQL_STORE) {
            SqlStores.checkShards(store, property);
        }
    }

    static String oneLine(Throwable e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return m.replaceAll("\\s*[\\r\\n]+\\s*", " ");
    }

    /** Touched only when outbox-store-sql is on the class path. */
    private static final class SqlStores {
        static void checkShards(Store store, String property) {
            if (!(store instanceof SqlStore sql)) {
                return;
            }
            try {
                sql.checkShards();
            } catch (StoreException e) {
                // The store's verdict (the counts differ, or its expression names none) carries no cause; a
                // failure to ask the database carries the database's error and is not a configuration error.
                if (e.isRetriable() || e.getCause() != null) {
                    log.warn("Could not check the outbox table's shard count at start-up (the dispatcher checks it"
                            + " before its first harvest): {}", oneLine(e));
                    return;
                }
                throw new OutboxConfigurationException(property, oneLine(e), "set " + property + " to the table's"
                        + " shard count, or change the table's count with the store's reshard() while no dispatcher"
                        + " runs (guide: \"Sharded harvest\")", e);
            }
        }
    }
}
