/**
 * The peers benchmark: each peer in its own JVM on the same servers, its results side by side with ours. Not
 * published.
 */
package dev.outbox.benchmarks.peers;
