/**
 * The end-to-end harness: several dispatcher processes on real servers, crashed and restarted by a scenario,
 * with the consumer-side checks. Test tooling, not published.
 */
package dev.outbox.it;
