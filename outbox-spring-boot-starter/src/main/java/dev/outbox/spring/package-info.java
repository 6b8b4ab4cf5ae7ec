/**
 * Spring Boot 4 starter for the outbox: {@link dev.outbox.spring.OutboxAutoConfiguration} builds the store, the
 * transaction-bound {@link dev.outbox.spring.OutboxPublisher} and the dispatcher
 * ({@link dev.outbox.spring.OutboxDispatcherLifecycle}) from {@code outbox.*} ({@link
 * dev.outbox.spring.OutboxProperties}) and Spring Boot's {@code spring.kafka.*}; Actuator health and Micrometer
 * metrics when present; a failure analyzer naming the property behind a bad configuration.
 */
package dev.outbox.spring;
