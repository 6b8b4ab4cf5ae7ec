/**
 * The shared base of the SQL stores (an adapter module, SPI side): SqlStore runs purge, retry, park, parked
 * records, replay, gauges, shards and fencing once from each dialect's statements (SqlStatements, statements as
 * data); SqlInbox the consumer's inbox. Stores and inboxes are thread-safe; builders are not.
 */
package dev.outbox.store.sql;
