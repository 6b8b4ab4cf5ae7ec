/**
 * The Spring Modulith bridge: with {@code spring.modulith.events.externalization.mode=outbox}, every event Spring
 * Modulith would externalize ({@code @Externalized}, or as the application's {@code EventExternalizationConfiguration}
 * selects) is written into the outbox in the publishing transaction, with Modulith's routing target as the topic
 * and its routing key as the key, and published by the outbox's dispatcher.
 */
package dev.outbox.spring.modulith;
