package dev.outbox.broker.rabbitmq;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.MessageBrokerContract;
import dev.outbox.testkit.ReceivedMessage;

import java.time.Duration;
import java.util.List;

/** The broker port's contract against a real RabbitMQ node: each topic an exchange with one queue bound. */
class RabbitMqMessageBrokerContractTest extends MessageBrokerContract {

    @Override
    protected MessageBroker createBroker() {
        return RabbitMqMessageBroker.builder().uri(RabbitMqTestSupport.rabbit().uri()).build();
    }

    @Override
    protected String newTopic() {
        return RabbitMqTestSupport.newTopic("contract");
    }

    @Override
    protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        return RabbitMqTestSupport.readBack(topic, expected, timeout);
    }

    /** A routing key longer than AMQP's 255 bytes. */
    @Override
    protected OutboxRecord permanentlyFailingRecord(String topic) {
        return record(OutboxMessage.of(topic, "k".repeat(300), "never"));
    }
}
