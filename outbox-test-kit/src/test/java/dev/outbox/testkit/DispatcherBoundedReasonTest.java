package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.Excerpt;
import dev.outbox.spi.MessageBroker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A writer's key of a megabyte must not become a megabyte of reason: the parked row's reason, the listener's and the
 * ERROR line are bounded ({@link Excerpt}), however long the broker's message is.
 */
class DispatcherBoundedReasonTest {
    private static final String HUGE_KEY = "k".repeat(1_048_576);

    @Test
    void aParkReasonIsBoundedWhateverTheBrokerSays() {
        InMemoryStore store = new InMemoryStore();
        List<ParkedRecord> heard = new CopyOnWriteArrayList<>();
        try (InMemoryStore.Transaction tx = store.begin()) {
            tx.write(OutboxMessage.of("t", HUGE_KEY, "v"));
            tx.commit();
        }
        try (Dispatcher d = Dispatcher.builder(store, new Refusing()).listener(new DispatcherListener() {
            @Override
            public void recordParked(ParkedRecord record) {
                heard.add(record);
            }
        }).build()) {
            d.start();
            Await.untilOrFail(() -> store.parkedCount() == 1 && heard.size() == 1, Duration.ofSeconds(30),
                    () -> "parked " + store.parkedCount() + ", heard " + heard.size());
        }
        String reason = store.parked(1).get(0).reason();
        assertThat(reason.length()).as("the stored reason's length").isLessThanOrEqualTo(
                Excerpt.MAX_REASON_LENGTH + 30);
        assertThat(reason).startsWith("permanent failure: ").contains("characters)");
        assertThat(heard.get(0).reason()).isEqualTo(reason);
    }

    /** Refuses every record for good, quoting its whole key, as a careless adapter might. */
    private static final class Refusing implements MessageBroker {
        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            return CompletableFuture.failedFuture(DeliveryException.permanent("refused key '" + record.key() + "'",
                    null));
        }

        @Override
        public boolean flush(Duration timeout) {
            return true;
        }

        @Override
        public void close(Duration timeout) {
        }
    }
}
