package dev.outbox.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

import java.util.function.Consumer;

/**
 * The {@code outbox.*} properties of the Spring Boot starter. Kafka connection settings (bootstrap servers, TLS,
 * SASL, client id, producer properties) come from Spring Boot's own {@code spring.kafka.*}, RabbitMQ's from
 * {@code spring.rabbitmq.*}; only what is the outbox's own is here. Each group is a class of its own:
 * {@link OutboxStoreProperties} ({@code outbox.store.*}, with {@link OutboxWalProperties} under
 * {@code outbox.store.wal.*}), {@link OutboxKafkaProperties} ({@code outbox.kafka.*}),
 * {@link OutboxRabbitMqProperties} ({@code outbox.rabbitmq.*}), {@link OutboxDispatcherProperties}
 * ({@code outbox.dispatcher.*}),
 * {@link OutboxPublisherProperties} ({@code outbox.publisher.*}), {@link OutboxHandlersProperties}
 * ({@code outbox.handlers.*}) and {@link OutboxTracingProperties} ({@code outbox.tracing.*}); {@code outbox.broker}
 * is here.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The starter reads it once, at start-up.
 */
@ConfigurationProperties("outbox")
public final class OutboxProperties {
    /**
     * Where the dispatcher publishes: to Kafka, to RabbitMQ, or to the {@code @OutboxHandler} methods of this
     * application.
     */
    private Broker broker = Broker.KAFKA;
    @NestedConfigurationProperty
    private final OutboxStoreProperties store = new OutboxStoreProperties();
    @NestedConfigurationProperty
    private final OutboxKafkaProperties kafka = new OutboxKafkaProperties();
    @NestedConfigurationProperty
    private final OutboxRabbitMqProperties rabbitmq = new OutboxRabbitMqProperties();
    @NestedConfigurationProperty
    private final OutboxDispatcherProperties dispatcher = new OutboxDispatcherProperties();
    @NestedConfigurationProperty
    private final OutboxPublisherProperties publisher = new OutboxPublisherProperties();
    @NestedConfigurationProperty
    private final OutboxHandlersProperties handlers = new OutboxHandlersProperties();
    @NestedConfigurationProperty
    private final OutboxTracingProperties tracing = new OutboxTracingProperties();

    /**
     * {@return where the dispatcher publishes, {@code KAFKA} (the default), {@code RABBITMQ} or {@code HANDLERS}}
     * Bound from the
     * {@code outbox.broker} property.
     */
    public Broker getBroker() {
        return broker;
    }

    /**
     * Sets the {@code outbox.broker} property.
     *
     * @param broker {@code KAFKA}, {@code RABBITMQ} or {@code HANDLERS} (bound from {@code kafka},
     *               {@code rabbitmq} or {@code handlers}); with {@code RABBITMQ}, {@code outbox-broker-rabbitmq} and
     *               {@code spring-boot-amqp} must be on the class path, with {@code HANDLERS} at least one bean must
     *               have an {@code @OutboxHandler} method (both checked at start-up)
     */
    public void setBroker(Broker broker) {
        this.broker = broker;
    }

    /**
     * {@return the {@code outbox.store.*} settings: the store and its tables; never {@code null}, the same object for
     * the bean's life}
     */
    public OutboxStoreProperties getStore() {
        return store;
    }

    /**
     * {@return the {@code outbox.kafka.*} settings: leader election and the outbox producer's bounds; never
     * {@code null}, the same object for the bean's life}
     */
    public OutboxKafkaProperties getKafka() {
        return kafka;
    }

    /**
     * {@return the {@code outbox.rabbitmq.*} settings: where topics go and the RabbitMQ broker's bounds, used when
     * {@code outbox.broker=rabbitmq}; never {@code null}, the same object for the bean's life}
     */
    public OutboxRabbitMqProperties getRabbitmq() {
        return rabbitmq;
    }

    /**
     * {@return the {@code outbox.dispatcher.*} settings: the dispatcher that harvests the outbox; never {@code null},
     * the same object for the bean's life}
     */
    public OutboxDispatcherProperties getDispatcher() {
        return dispatcher;
    }

    /**
     * {@return the {@code outbox.publisher.*} settings: the {@link OutboxPublisher} bean's; never {@code null}, the
     * same object for the bean's life}
     */
    public OutboxPublisherProperties getPublisher() {
        return publisher;
    }

    /**
     * {@return the {@code outbox.handlers.*} settings: the pool the {@code @OutboxHandler} methods run on, used when
     * {@code outbox.broker=handlers}; never {@code null}, the same object for the bean's life}
     */
    public OutboxHandlersProperties getHandlers() {
        return handlers;
    }

    /**
     * {@return the {@code outbox.tracing.*} settings: the trace context the messages carry, with
     * {@code outbox-opentelemetry}; never {@code null}, the same object for the bean's life}
     */
    public OutboxTracingProperties getTracing() {
        return tracing;
    }

    /** Where the dispatcher publishes ({@code outbox.broker}). */
    public enum Broker {
        /** To the Kafka cluster of {@code spring.kafka.*} (the default). */
        KAFKA,
        /**
         * To the RabbitMQ node of {@code spring.rabbitmq.*} ({@code RabbitMqMessageBroker}, with
         * {@code outbox.rabbitmq.*}); needs {@code outbox-broker-rabbitmq} and {@code spring-boot-amqp} on the class
         * path. Leader election does not come with it: set {@code outbox.dispatcher.leader-election} to
         * {@code database} (or {@code none}), or keep {@code kafka} with {@code spring.kafka.bootstrap-servers}.
         */
        RABBITMQ,
        /**
         * To the application's {@code @OutboxHandler} methods, in this process ({@code HandlerMessageBroker}): the
         * outbox as a reliable after-commit job queue. Leader election is as configured (over Kafka unless
         * {@code outbox.dispatcher.leader-election=false}), so only the leader runs handlers.
         */
        HANDLERS
    }

    /** Which store implementation holds the outbox. */
    public enum StoreType {
        /** PostgreSQL 13 or newer ({@code outbox-store-postgres}). */
        POSTGRES,
        /** MySQL 8 or MariaDB 10.6 and newer ({@code outbox-store-mysql}). */
        MYSQL,
        /** H2 2.2 or newer, embedded, for development and tests ({@code outbox-store-h2}). */
        H2
    }

    /** Applies one setting, naming {@code property} when the setter rejects {@code value}. */
    static <T> void set(String property, T value, Consumer<T> setter) {
        try {
            setter.accept(value);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new OutboxConfigurationException(property, "'" + value + "' is not valid: " + e.getMessage(),
                    "use a value the dispatcher accepts (see the message)", e);
        }
    }
}
