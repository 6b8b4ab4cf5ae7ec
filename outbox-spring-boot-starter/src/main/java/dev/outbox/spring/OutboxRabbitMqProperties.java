package dev.outbox.spring;

import org.springframework.util.unit.DataSize;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The outbox's own RabbitMQ settings ({@code outbox.rabbitmq.*}), used when {@code outbox.broker=rabbitmq}: where
 * topics go and the bounds of the {@code RabbitMqMessageBroker} (see its builder for each setting). The connection
 * (addresses, credentials, virtual host, TLS) comes from Spring Boot's {@code spring.rabbitmq.*}; the values here
 * replace Boot's {@code spring.rabbitmq.connection-timeout} and {@code requested-heartbeat} for the outbox's
 * connection, because the broker bounds every call it makes by them.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxRabbitMqProperties {
    /** Which exchange a topic's records go to; a topic not listed goes to the exchange of its own name. */
    private final Map<String, String> exchanges = new LinkedHashMap<>();
    /** Every record is confirmed by the node or failed (as an outage) within it; at most 2 minutes. */
    private Duration confirmTimeout = Duration.ofSeconds(8);
    /** Bound on connecting, the AMQP handshake, opening a channel, checking an exchange and closing. */
    private Duration operationTimeout = Duration.ofSeconds(5);
    /** The AMQP heartbeat asked of the node: a node silent for about two of them is taken as lost. */
    private Duration heartbeat = Duration.ofSeconds(10);
    /** The largest value sent; a larger one is parked before it is sent. RabbitMQ's own default limit. */
    private DataSize maxMessageSize = DataSize.ofMegabytes(128);
    /** The connection's name, as the node's management shows it. */
    private String connectionName = "outbox";

    /**
     * {@return the exchange of each topic that does not go to the exchange of its own name; empty by default, a
     * live map the binder fills} Bound from {@code outbox.rabbitmq.exchanges.<topic>=<exchange>} (a topic with dots
     * in brackets: {@code outbox.rabbitmq.exchanges[orders.v1]=orders}); an empty exchange is RabbitMQ's default
     * exchange, which routes by queue name (the record's key).
     */
    public Map<String, String> getExchanges() {
        return exchanges;
    }

    /**
     * {@return the bound on every send, 8 seconds by default} Bound from {@code outbox.rabbitmq.confirm-timeout}.
     */
    public Duration getConfirmTimeout() {
        return confirmTimeout;
    }

    /**
     * Sets the {@code outbox.rabbitmq.confirm-timeout} property.
     *
     * @param confirmTimeout 1 ms to 2 minutes; checked at start-up
     */
    public void setConfirmTimeout(Duration confirmTimeout) {
        this.confirmTimeout = confirmTimeout;
    }

    /**
     * {@return the bound on connecting, the handshake, opening a channel, checking an exchange and closing, 5 seconds
     * by default} Bound from {@code outbox.rabbitmq.operation-timeout}.
     */
    public Duration getOperationTimeout() {
        return operationTimeout;
    }

    /**
     * Sets the {@code outbox.rabbitmq.operation-timeout} property.
     *
     * @param operationTimeout 100 ms to 2 minutes; checked at start-up
     */
    public void setOperationTimeout(Duration operationTimeout) {
        this.operationTimeout = operationTimeout;
    }

    /**
     * {@return the AMQP heartbeat asked of the node, 10 seconds by default} Bound from
     * {@code outbox.rabbitmq.heartbeat}.
     */
    public Duration getHeartbeat() {
        return heartbeat;
    }

    /**
     * Sets the {@code outbox.rabbitmq.heartbeat} property.
     *
     * @param heartbeat 1 second to 10 minutes; checked at start-up
     */
    public void setHeartbeat(Duration heartbeat) {
        this.heartbeat = heartbeat;
    }

    /**
     * {@return the largest value sent, 128 MB by default (RabbitMQ's own {@code max_message_size})} Bound from
     * {@code outbox.rabbitmq.max-message-size}.
     */
    public DataSize getMaxMessageSize() {
        return maxMessageSize;
    }

    /**
     * Sets the {@code outbox.rabbitmq.max-message-size} property.
     *
     * @param maxMessageSize 1 byte to 2 GB; checked at start-up. Set the node's {@code max_message_size} here if it
     *                       is lower
     */
    public void setMaxMessageSize(DataSize maxMessageSize) {
        this.maxMessageSize = maxMessageSize;
    }

    /**
     * {@return the connection's name as the node shows it, {@code outbox} by default} Bound from
     * {@code outbox.rabbitmq.connection-name}.
     */
    public String getConnectionName() {
        return connectionName;
    }

    /**
     * Sets the {@code outbox.rabbitmq.connection-name} property.
     *
     * @param connectionName not blank; checked at start-up
     */
    public void setConnectionName(String connectionName) {
        this.connectionName = connectionName;
    }
}
