package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxMessage;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.spi.PurgeListener;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the Kafka page's exactly-once snippet ({@link ExactlyOnceSnippets}) with a dispatcher on a real Kafka. */
class ExactlyOnceSnippetsTest {

    @Test
    void theSnippetsBrokerPublishesAndListensForPurges() {
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        InMemoryStore store = new InMemoryStore();
        try (KafkaMessageBroker broker = ExactlyOnceSnippets.broker(kafka.bootstrapServers());
             Dispatcher dispatcher = Dispatcher.builder(store, broker).build()) {
            assertThat(broker.capability(PurgeListener.class)).isPresent();
            dispatcher.start();
            try (InMemoryStore.Transaction tx = store.begin()) {
                tx.write(OutboxMessage.of("orders", "order-1", "{\"orderId\":1}"));
                tx.commit();
            }
            Await.untilOrFail(() -> store.size() == 0, Duration.ofSeconds(30), () -> "published and purged");
            assertThat(broker.committedTransactions()).isPositive();
        }
    }
}
