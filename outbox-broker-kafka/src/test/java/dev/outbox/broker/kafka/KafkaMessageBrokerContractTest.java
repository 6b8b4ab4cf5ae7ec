package dev.outbox.broker.kafka;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.MessageBrokerContract;
import dev.outbox.testkit.ReceivedMessage;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** The broker port's contract against a real in-process Kafka broker. */
class KafkaMessageBrokerContractTest extends MessageBrokerContract {
    private static KafkaServer kafka;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    @Override
    protected MessageBroker createBroker() {
        return KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers()).build();
    }

    @Override
    protected String newTopic() {
        String topic = "contract-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        return topic;
    }

    @Override
    protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        List<ReceivedMessage> out = new ArrayList<>();
        for (ConsumerRecord<String, byte[]> r : KafkaReader.read(kafka.bootstrapServers(), topic, expected, timeout)) {
            List<Header> headers = new ArrayList<>();
            r.headers().forEach(h -> headers.add(Header.of(h.key(), h.value())));
            out.add(new ReceivedMessage(r.topic(), r.key(), r.value(), headers));
        }
        return out;
    }

    /** Larger than the producer's {@code max.request.size} (1 MiB by default). */
    @Override
    protected OutboxRecord permanentlyFailingRecord(String topic) {
        return record(OutboxMessage.of(topic, "too-large", new byte[2 * 1024 * 1024]));
    }
}
