package dev.outbox.spring;

import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Applies the outbox's own RabbitMQ settings ({@link OutboxRabbitMqProperties}, {@code outbox.rabbitmq.*} in the
 * starter, the {@code rabbitmq:} section in the sidecar) to a {@link RabbitMqMessageBroker.Builder}, turning a value
 * the builder rejects into an {@link OutboxConfigurationException} naming the property that set it. Used only when
 * {@code outbox-broker-rabbitmq} is on the class path. Stateless and thread-safe.
 */
public final class OutboxRabbitMqClients {
    /** AMQP's limit on an exchange name, in bytes (UTF-8). */
    private static final int MAX_EXCHANGE_BYTES = 255;

    private OutboxRabbitMqClients() {
    }

    /**
     * Applies the exchange mapping, confirm timeout, operation timeout, heartbeat, largest message and connection
     * name of {@code settings} to {@code b}.
     *
     * @param b        the builder, with its connection ({@code uri} or {@code connectionFactory}) set or to be set
     * @param prefix   the settings' property prefix, e.g. {@code outbox.rabbitmq}: a bad value is reported as
     *                 {@code <prefix>.<setting>}
     * @param settings the settings; not {@code null}
     * @return {@code b}
     * @throws OutboxConfigurationException naming the property of a value that is rejected (out of range, an exchange
     *                                      name longer than AMQP's 255 bytes, a blank connection name)
     */
    public static RabbitMqMessageBroker.Builder brokerSettings(RabbitMqMessageBroker.Builder b, String prefix,
                                                               OutboxRabbitMqProperties settings) {
        Map<String, String> exchanges = new LinkedHashMap<>();
        settings.getExchanges().forEach((topic, exchange) -> {
            String e = exchange == null ? "" : exchange.strip();
            if (e.getBytes(StandardCharsets.UTF_8).length > MAX_EXCHANGE_BYTES) {
                throw new OutboxConfigurationException(prefix + ".exchanges." + topic, "names an exchange of "
                        + e.getBytes(StandardCharsets.UTF_8).length + " bytes, more than AMQP's "
                        + MAX_EXCHANGE_BYTES, "give the topic an exchange with a shorter name", null);
            }
            exchanges.put(topic, e);
        });
        Map<String, String> mapping = Map.copyOf(exchanges);
        b.exchangeMapping(topic -> mapping.getOrDefault(topic, topic));
        OutboxProperties.set(prefix + ".confirm-timeout", settings.getConfirmTimeout(), b::confirmTimeout);
        OutboxProperties.set(prefix + ".operation-timeout", settings.getOperationTimeout(), b::operationTimeout);
        OutboxProperties.set(prefix + ".heartbeat", settings.getHeartbeat(), b::heartbeat);
        OutboxProperties.set(prefix + ".max-message-size", settings.getMaxMessageSize(), size -> {
            long bytes = size.toBytes();
            if (bytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("maxMessageSize must be at most " + Integer.MAX_VALUE
                        + " bytes, was " + bytes);
            }
            b.maxMessageSize((int) bytes);
        });
        OutboxProperties.set(prefix + ".connection-name", settings.getConnectionName(), b::connectionName);
        return b;
    }
}
