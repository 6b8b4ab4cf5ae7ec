/**
 * OpenTelemetry tracing: a message decorator that carries the writer's trace context in the message headers.
 * API for applications; thread-safe.
 */
package dev.outbox.opentelemetry;
