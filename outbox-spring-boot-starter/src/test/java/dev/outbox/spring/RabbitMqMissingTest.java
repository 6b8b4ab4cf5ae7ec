package dev.outbox.spring;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import javax.sql.DataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter without RabbitMQ on its class path (hidden by a filtering class loader): {@code outbox.broker=rabbitmq}
 * stops start-up naming {@code outbox.broker} and what to add, and Kafka, the default, still needs no RabbitMQ
 * class. On a real PostgreSQL.
 */
class RabbitMqMissingTest {

    private static ApplicationContextRunner runner(FilteredClassLoader loader) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_rabbitmq_missing");
        DataSource dataSource = postgres.dataSource(url);
        return new ApplicationContextRunner().withClassLoader(loader)
                .withConfiguration(AutoConfigurations.of(OutboxAutoConfiguration.class))
                .withBean(DataSource.class, () -> dataSource)
                .withPropertyValues("outbox.store.create-schema=true", "outbox.dispatcher.leader-election=database");
    }

    @Test
    void rabbitMqChosenWithoutItsModulesNamesOutboxBrokerAndWhatToAdd() {
        runner(new FilteredClassLoader("dev.outbox.broker.rabbitmq", "org.springframework.boot.amqp"))
                .withPropertyValues("outbox.broker=rabbitmq")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .isInstanceOf(OutboxConfigurationException.class)
                        .hasMessage("Outbox configuration property 'outbox.broker': is rabbitmq, but the class path"
                                + " lacks dev.outbox:outbox-broker-rabbitmq and"
                                + " org.springframework.boot:spring-boot-amqp (or spring-boot-starter-amqp)"));
    }

    @Test
    void withoutSpringBootAmqpOnlyThatIsNamed() {
        runner(new FilteredClassLoader("org.springframework.boot.amqp"))
                .withPropertyValues("outbox.broker=rabbitmq")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageEndingWith("lacks org.springframework.boot:spring-boot-amqp (or"
                                + " spring-boot-starter-amqp)"));
    }

    @Test
    void kafkaByDefaultWithoutRabbitMqOnTheClassPathNamesTheBootstrapServersNotTheBroker() {
        runner(new FilteredClassLoader("dev.outbox.broker.rabbitmq", "org.springframework.boot.amqp"))
                .run(context -> assertThat(context).getFailure().rootCause()
                        .isInstanceOf(OutboxConfigurationException.class)
                        .hasMessageStartingWith("Outbox configuration property 'spring.kafka.bootstrap-servers': not"
                                + " set"));
    }
}
