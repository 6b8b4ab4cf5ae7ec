/**
 * The Postgres outbox store: {@link dev.outbox.store.postgres.PostgresStore} (the dispatcher's side: read or mark,
 * purge, reset, park) and {@link dev.outbox.store.postgres.PostgresPublisher} (the application's side: writing
 * messages inside its own transaction), on Jdbi 3 and the official PostgreSQL JDBC driver.
 *
 * <p>The table layout is in the {@code schema.sql} resource of this package; {@link
 * dev.outbox.store.postgres.PostgresStore#schemaSql()} renders it for a configured table name and {@link
 * dev.outbox.store.postgres.PostgresStore#createSchema()} applies it.
 */
package dev.outbox.store.postgres;
