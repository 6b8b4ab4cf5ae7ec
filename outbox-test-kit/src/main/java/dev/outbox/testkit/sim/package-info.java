/**
 * The deterministic simulation: many dispatchers, a store and a broker on one virtual clock and one scheduler
 * that chooses every interleaving, with planted bugs it must catch. Test tooling, not API; single-threaded by
 * construction.
 */
package dev.outbox.testkit.sim;
