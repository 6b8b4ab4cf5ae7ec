/**
 * The MySQL and MariaDB outbox store: {@link dev.outbox.store.mysql.MySqlStore} (the dispatcher's side: mark,
 * purge, reset, park) and {@link dev.outbox.store.mysql.MySqlPublisher} (the application's side: writing messages
 * inside its own transaction), on Jdbi 3 and MySQL Connector/J, for MySQL 8.0 and MariaDB 10.6 or newer.
 *
 * <p>The table layout is in the {@code schema.sql} resource of this package; {@link
 * dev.outbox.store.mysql.MySqlStore#schemaSql()} renders it for a configured table name and {@link
 * dev.outbox.store.mysql.MySqlStore#createSchema()} applies it.
 */
package dev.outbox.store.mysql;
