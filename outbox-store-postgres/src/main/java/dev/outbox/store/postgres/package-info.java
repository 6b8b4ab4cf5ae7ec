/**
 * The Postgres outbox store: {@link dev.outbox.store.postgres.PostgresStore} (the dispatcher's side: read or mark,
 * purge, reset, park) and {@link dev.outbox.store.postgres.PostgresPublisher} (the application's side: writing
 * messages inside its own transaction), on Jdbi 3 and the official PostgreSQL JDBC driver.
 *
 * <p>The table layout is in the {@code schema.sql} resource of this package; {@link
 * dev.outbox.store.postgres.PostgresStore#schemaSql()} renders it for a configured table name and {@link
 * dev.outbox.store.postgres.PostgresStore#createSchema()} applies it.
 *
 * <p>For the WAL harvest, where a message is a transactional logical message in the write-ahead log rather than a
 * row, the {@code wal.sql} resource of this package documents the message's versioned binary format (a public
 * contract for writers in any language) and creates the SQL functions {@code <table>_wal_encode} and
 * {@code <table>_emit} with which plain-SQL writers emit messages.
 */
package dev.outbox.store.postgres;
