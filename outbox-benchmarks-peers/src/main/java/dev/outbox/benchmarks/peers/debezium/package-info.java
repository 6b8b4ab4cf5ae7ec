/**
 * The Debezium peer (embedded engine, pgoutput, outbox event router). Not published.
 */
package dev.outbox.benchmarks.peers.debezium;
