/**
 * Real servers for tests (embedded Postgres, MySQL 8, MariaDB, Kafka), started once per JVM. Test tooling, not
 * published; thread-safe.
 */
package dev.outbox.testservers;
