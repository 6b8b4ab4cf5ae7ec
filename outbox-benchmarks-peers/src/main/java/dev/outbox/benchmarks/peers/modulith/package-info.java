/**
 * The Spring Modulith peer (JDBC event publication registry, externalized events to Kafka). Not published.
 */
package dev.outbox.benchmarks.peers.modulith;
