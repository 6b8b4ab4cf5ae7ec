/**
 * The H2 outbox store, for development and tests: {@link dev.outbox.store.h2.H2Store} on H2 2.x, embedded (an
 * in-memory or file database in the application's JVM). The table layout is in the {@code schema.sql} resource of
 * this package; {@link dev.outbox.store.h2.H2Store#schemaSql()} renders it and
 * {@link dev.outbox.store.h2.H2Store#createSchema()} applies it. API for applications; thread-safe.
 */
package dev.outbox.store.h2;
