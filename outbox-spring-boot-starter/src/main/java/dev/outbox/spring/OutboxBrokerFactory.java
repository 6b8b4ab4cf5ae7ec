package dev.outbox.spring;

import dev.outbox.spi.MessageBroker;
import org.springframework.util.ClassUtils;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds the dispatcher's broker for a broker whose classes are optional ({@code outbox.broker=rabbitmq}): a bean of
 * this type exists only where they are on the class path, so that {@link OutboxAutoConfiguration} never names them.
 * It names none of them either (loading it must not load them), and says which are missing.
 */
@FunctionalInterface
interface OutboxBrokerFactory {
    /** In {@code outbox-broker-rabbitmq}. */
    String RABBITMQ_BROKER_CLASS = "dev.outbox.broker.rabbitmq.RabbitMqMessageBroker";
    /** In {@code spring-boot-amqp}. */
    String RABBITMQ_BOOT_CLASS = "org.springframework.boot.amqp.autoconfigure.RabbitProperties";

    /**
     * Which of the artifacts {@code outbox.broker=rabbitmq} needs are not on the class path.
     *
     * @param loader the application's class loader
     * @return {@code null} if both are there, else what to add
     */
    static String missingForRabbitMq(ClassLoader loader) {
        List<String> missing = new ArrayList<>();
        if (!ClassUtils.isPresent(RABBITMQ_BROKER_CLASS, loader)) {
            missing.add("dev.outbox:outbox-broker-rabbitmq");
        }
        if (!ClassUtils.isPresent(RABBITMQ_BOOT_CLASS, loader)) {
            missing.add("org.springframework.boot:spring-boot-amqp (or spring-boot-starter-amqp)");
        }
        return missing.isEmpty() ? null : String.join(" and ", missing);
    }

    /**
     * Builds the broker (it connects in the background).
     *
     * @return a new broker, closed by the dispatcher
     * @throws OutboxConfigurationException naming the property of a setting that is rejected
     */
    MessageBroker create();
}
