package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.handlers.HandlerMessageBroker;
import dev.outbox.handlers.PermanentFailureException;
import dev.outbox.spi.MessageBroker;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Proves {@link HandlerMessageBroker} with the broker contract: each test's broker has handlers for a few fresh
 * topics, which keep what they were handed; a record whose value is {@code poison} is refused for good.
 */
class HandlerMessageBrokerContractTest extends MessageBrokerContract {
    private static final AtomicInteger GENERATIONS = new AtomicInteger();
    private static final int TOPICS_PER_TEST = 4;

    private final Map<String, List<ReceivedMessage>> handled = new ConcurrentHashMap<>();
    private final Deque<String> topics = new ArrayDeque<>();

    @Override
    protected MessageBroker createBroker() {
        int generation = GENERATIONS.incrementAndGet();
        HandlerMessageBroker.Builder b = HandlerMessageBroker.builder(TextEvents.SERIALIZER)
                .name("contract-" + generation).threads(4);
        for (int i = 0; i < TOPICS_PER_TEST; i++) {
            String topic = "handled-" + generation + "-" + i;
            topics.add(topic);
            List<ReceivedMessage> mine = new CopyOnWriteArrayList<>();
            handled.put(topic, mine);
            b.handler(topic, byte[].class, (value, record) -> {
                if (value != null && "poison".equals(new String(value, StandardCharsets.UTF_8))) {
                    throw new PermanentFailureException("poison is never accepted");
                }
                mine.add(ReceivedMessage.of(record));
            });
        }
        return b.build();
    }

    @Override
    protected String newTopic() {
        return topics.remove();
    }

    @Override
    protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        List<ReceivedMessage> mine = handled.get(topic);
        Await.until(() -> mine.size() >= expected, timeout);
        return List.copyOf(mine);
    }

    @Override
    protected OutboxRecord permanentlyFailingRecord(String topic) {
        return record(OutboxMessage.of(topic, "poisoned", "poison"));
    }
}
