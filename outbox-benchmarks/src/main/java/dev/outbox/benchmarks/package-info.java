/**
 * The benchmark (./bench.sh): throughput, latency and take-over scenarios on real servers, printing their
 * numbers and the command. Not published.
 */
package dev.outbox.benchmarks;
