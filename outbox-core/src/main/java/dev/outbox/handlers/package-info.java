/**
 * In-process handlers: the outbox as a reliable after-commit job queue. {@link dev.outbox.handlers.HandlerMessageBroker}
 * is a {@link dev.outbox.spi.MessageBroker} that, instead of publishing to a broker, calls the handler registered in
 * this process for each record's topic (or type header), with the payload decoded by the application's
 * {@link dev.outbox.spi.PayloadSerializer}. Retries, backoff, {@code maxAttempts}, parking, per-key order and
 * leadership are the dispatcher's, as for Kafka. No dependency beyond the core.
 */
package dev.outbox.handlers;
