package dev.outbox.broker.kafka;

import dev.outbox.spi.MessageBroker;
import dev.outbox.testservers.TestServers;

import java.util.UUID;

/**
 * The broker port's contract against a real in-process Kafka broker, with the transactional producer: its records
 * go through the transaction thread, so a topic that must be waited for would hold up every transaction there.
 */
class KafkaTransactionalMessageBrokerContractTest extends KafkaMessageBrokerContractTest {
    @Override
    protected MessageBroker createBroker() {
        return KafkaMessageBroker.builder().bootstrapServers(TestServers.kafka().bootstrapServers())
                .transactionalId("contract-" + UUID.randomUUID()).build();
    }
}
