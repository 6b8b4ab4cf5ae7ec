/**
 * OpenTelemetry tracing: a message decorator that carries the writer's trace context in the message headers, and
 * a record handler that continues it in a {@code KafkaInboxConsumer}. API for applications; thread-safe.
 */
package dev.outbox.opentelemetry;
