package dev.outbox.spring;

import com.rabbitmq.client.ConnectionFactory;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.spi.MessageBroker;
import org.springframework.amqp.rabbit.connection.RabbitConnectionFactoryBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.amqp.autoconfigure.RabbitConnectionDetails;
import org.springframework.boot.amqp.autoconfigure.RabbitConnectionFactoryBeanConfigurer;
import org.springframework.boot.amqp.autoconfigure.RabbitProperties;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.ResourceLoader;


/**
 * {@code outbox.broker=rabbitmq}: the {@link RabbitMqMessageBroker} the dispatcher publishes to, connected as Spring
 * Boot's {@code spring.rabbitmq.*} says (addresses, credentials, virtual host, TLS and SSL bundles, a credentials
 * provider bean: through Boot's own {@link RabbitConnectionFactoryBeanConfigurer}), with the outbox's
 * {@code outbox.rabbitmq.*}. Only when {@code outbox-broker-rabbitmq} and {@code spring-boot-amqp} are on the class
 * path: without them, {@code outbox.broker=rabbitmq} stops start-up naming {@code outbox.broker}. Imported by
 * {@link OutboxAutoConfiguration}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {OutboxBrokerFactory.RABBITMQ_BROKER_CLASS, OutboxBrokerFactory.RABBITMQ_BOOT_CLASS})
@ConditionalOnProperty(name = "outbox.broker", havingValue = "rabbitmq")
@EnableConfigurationProperties(RabbitProperties.class)
class OutboxRabbitMqConfiguration {

    /** Builds the broker when the dispatcher is created (it connects then), not before. */
    @Bean
    OutboxBrokerFactory outboxRabbitMqBroker(RabbitProperties rabbit,
                                             ObjectProvider<RabbitConnectionFactoryBeanConfigurer> configurer,
                                             ObjectProvider<RabbitConnectionDetails> details,
                                             ResourceLoader resourceLoader, OutboxProperties properties) {
        return () -> broker(rabbit, configurer.getIfAvailable(() -> new RabbitConnectionFactoryBeanConfigurer(
                resourceLoader, rabbit)), details.getIfAvailable(), properties.getRabbitmq());
    }

    private static MessageBroker broker(RabbitProperties rabbit, RabbitConnectionFactoryBeanConfigurer configurer,
                                        RabbitConnectionDetails details, OutboxRabbitMqProperties outbox) {
        int addresses = details != null ? details.getAddresses().size() : rabbit.determineAddresses().size();
        if (addresses > 1) {
            throw new OutboxConfigurationException("spring.rabbitmq.addresses", "lists " + addresses + " nodes;"
                    + " the outbox's broker keeps one connection to one node and would never fail over to the others",
                    "give one address (a load balancer's in front of the cluster, for one), or leave"
                            + " spring.rabbitmq.addresses to your own clients and set spring.rabbitmq.host", null);
        }
        ConnectionFactory factory;
        try {
            RabbitConnectionFactoryBean bean = new RabbitConnectionFactoryBean();
            configurer.configure(bean);
            bean.afterPropertiesSet();
            factory = bean.getObject();
        } catch (Exception e) {
            // The message is the exception's class and Boot's own words, which name settings, never their values.
            throw new OutboxConfigurationException("spring.rabbitmq", "the connection settings are not usable: "
                    + e.getClass().getSimpleName() + ": " + OutboxSchemaInitializer.oneLine(e), "fix the"
                    + " spring.rabbitmq.* settings the message names (TLS key and trust stores, SSL bundle)", e);
        }
        RabbitMqMessageBroker.Builder b = RabbitMqMessageBroker.builder().connectionFactory(factory);
        OutboxRabbitMqClients.brokerSettings(b, "outbox.rabbitmq", outbox);
        return b.build();
    }
}
