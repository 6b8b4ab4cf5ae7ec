/**
 * JSON payloads for outbox messages with Jackson 3: {@link dev.outbox.jackson.JacksonPayloadSerializer}, an
 * implementation of the core's {@link dev.outbox.spi.PayloadSerializer}. Usable with or without Spring.
 */
package dev.outbox.jackson;
