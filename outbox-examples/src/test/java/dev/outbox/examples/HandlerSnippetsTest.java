package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.jackson.JacksonPayloadSerializer;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the guide's handlers snippet over the test kit's in-memory store. */
class HandlerSnippetsTest {

    @Test
    void theSnippetsHandlerReceivesTheEventAndARefusedOneReachesTheFallback() {
        InMemoryStore store = new InMemoryStore();
        HandlerSnippets snippets = new HandlerSnippets();
        try (InMemoryStore.Transaction tx = store.begin()) {
            tx.publish(List.of(JacksonPayloadSerializer.create().message("order-events", "c1",
                            new HandlerSnippets.OrderPlaced(1, "c1")),
                    JacksonPayloadSerializer.create().message("order-events", "c2",
                            new HandlerSnippets.OrderPlaced(2, ""))));
            tx.commit();
        }
        Dispatcher dispatcher = snippets.dispatcher(store, DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(10)).build());
        try {
            Await.untilOrFail(() -> store.size() == 0 && snippets.alerts.size() == 1, Duration.ofSeconds(30),
                    store::toString);
            assertThat(snippets.confirmed).containsExactly(new HandlerSnippets.OrderPlaced(1, "c1"));
            assertThat(snippets.alerts).singleElement().asString().contains("2: ", "permanent", "no customer");
        } finally {
            dispatcher.close();
        }
    }
}
