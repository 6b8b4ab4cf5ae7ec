package dev.outbox.examples;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.MessageBrokerContract;
import dev.outbox.testkit.ReceivedMessage;
import org.junit.jupiter.api.AfterAll;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

// tag::contract[]
/** Proves {@link WebhookMessageBroker} with the test kit's contract, against a real local HTTP server. */
class WebhookMessageBrokerContractTest extends MessageBrokerContract {
    private static final WebhookReceiver receiver = WebhookReceiver.start();
    private static final AtomicInteger topics = new AtomicInteger();

    @Override
    protected MessageBroker createBroker() {
        return WebhookMessageBroker.builder(receiver.endpoint()).requestTimeout(Duration.ofSeconds(5)).build();
    }

    @Override
    protected String newTopic() {
        return "orders-" + topics.incrementAndGet(); // the receiver keeps messages per topic
    }

    @Override
    protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) {
        return receiver.await(topic, expected, timeout);
    }

    @Override
    protected OutboxRecord permanentlyFailingRecord(String topic) {
        return record(OutboxMessage.of(topic, "too-large", new byte[WebhookReceiver.MAX_BODY + 1])); // HTTP 413
    }

    @AfterAll
    static void stopReceiver() {
        receiver.close();
    }
}
// end::contract[]
