package dev.outbox.spring;

import dev.outbox.spi.MessageBroker;

/**
 * Builds the dispatcher's broker for a broker whose classes are optional ({@code outbox.broker=rabbitmq}): a bean of
 * this type exists only where they are on the class path, so that {@link OutboxAutoConfiguration} never names them.
 */
@FunctionalInterface
interface OutboxBrokerFactory {

    /**
     * Builds the broker (it connects in the background).
     *
     * @return a new broker, closed by the dispatcher
     * @throws OutboxConfigurationException naming the property of a setting that is rejected
     */
    MessageBroker create();
}
