/**
 * The peers benchmark's harness (./bench.sh --scenarios peers): the same writers and checker for our dispatcher
 * and the alternatives. Not published.
 */
package dev.outbox.benchmarks;
