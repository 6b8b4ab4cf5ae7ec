package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

class InMemoryBrokerContractTest extends MessageBrokerContract {
    private static final int MAX_RECORD_SIZE = 256 * 1024;
    private static final AtomicInteger TOPICS = new AtomicInteger();

    @Override
    protected MessageBroker createBroker() {
        return InMemoryBroker.builder().maxRecordSize(MAX_RECORD_SIZE).build();
    }

    @Override
    protected String newTopic() {
        return "topic-" + TOPICS.incrementAndGet();
    }

    @Override
    protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        InMemoryBroker inMemory = (InMemoryBroker) broker;
        Await.until(() -> inMemory.delivered(topic).size() >= expected, timeout);
        return inMemory.delivered(topic).stream().map(ReceivedMessage::of).toList();
    }

    @Override
    protected OutboxRecord permanentlyFailingRecord(String topic) {
        return record(OutboxMessage.of(topic, "too-large", new byte[MAX_RECORD_SIZE + 1]));
    }
}
