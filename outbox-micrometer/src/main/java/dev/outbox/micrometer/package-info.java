/**
 * Micrometer meters for a Dispatcher (OutboxMetrics, a DispatcherObserver). API for applications; thread-safe.
 */
package dev.outbox.micrometer;
