package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's side of the wake-ups: an idle leader's pause ends on a commit signal ({@code Store.watchCommits}),
 * it subscribes while it leads and lets go when it stops, and it asks the broker to send at once
 * ({@code MessageBroker.sendPending}) only when it has caught up with nothing else in flight, never while it drains
 * a backlog in full reads.
 */
class DispatcherWakeUpTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    /** Counts {@link #sendPending()} calls on the way to an {@link InMemoryBroker}. */
    private static final class CountingBroker implements MessageBroker {
        final InMemoryBroker delegate = new InMemoryBroker();
        final AtomicInteger sendPending = new AtomicInteger();

        @Override
        public CompletionStage<Void> send(OutboxRecord record) {
            return delegate.send(record);
        }

        @Override
        public boolean flush(Duration timeout) {
            return delegate.flush(timeout);
        }

        @Override
        public void sendPending() {
            sendPending.incrementAndGet();
        }

        @Override
        public void close(Duration timeout) {
            delegate.close(timeout);
        }
    }

    private static DispatcherConfig.Builder slowPolling() {
        return DispatcherConfig.builder()
                .pollInterval(Duration.ofSeconds(30))
                .markBackoff(Duration.ofSeconds(30)) // an empty read waits 30 s, unless woken
                .heartbeatTimeout(Duration.ofMinutes(2))
                .rescanInterval(Duration.ofHours(1))
                .drainTimeout(Duration.ofSeconds(2));
    }

    private static void awaitIdleLeader(Dispatcher dispatcher) {
        Await.untilOrFail(() -> dispatcher.health().status() == DispatcherHealth.Status.LEADER
                && dispatcher.health().lastMark().isPresent(), WAIT, () -> "not leading: " + dispatcher.health());
    }

    @Test
    void aCommitWakesAnIdleLeaderThatWouldPollIn30SecondsAndItSendsWithoutLingering() {
        InMemoryStore store = new InMemoryStore();
        store.commitNotifications(true);
        CountingBroker broker = new CountingBroker();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(slowPolling().build()).name("woken")
                .build()) {
            dispatcher.start();
            awaitIdleLeader(dispatcher);
            Await.untilOrFail(() -> store.commitWatches() == 1, WAIT, () -> "the leader does not watch commits");
            for (int i = 1; i <= 3; i++) {
                int before = broker.sendPending.get();
                store.publisher().publish(null, OutboxMessage.of("t", "k", "after idle #" + i));
                int n = i;
                assertThat(broker.delegate.awaitDelivered(n, Duration.ofSeconds(15)))
                        .as("record %d delivered before the next poll", n).isTrue();
                if (i > 1) {
                    // The leader's first read asks for one row (it knows no row size yet), and one row fills it.
                    Await.untilOrFail(() -> broker.sendPending.get() > before, WAIT,
                            () -> "a lone record is sent without lingering: " + broker.sendPending.get() + " calls");
                }
            }
        }
        assertThat(store.commitWatches()).as("closing lets the watch go").isZero();
    }

    @Test
    void aStoreWithoutCommitNotificationsIsPolledAsBefore() {
        InMemoryStore store = new InMemoryStore(); // commitNotifications off: watchCommits returns null
        CountingBroker broker = new CountingBroker();
        DispatcherConfig config = DispatcherConfig.builder().pollInterval(Duration.ofMillis(20))
                .markBackoff(Duration.ofMillis(1)).build();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("polled").build()) {
            dispatcher.start();
            awaitIdleLeader(dispatcher);
            store.publisher().publish(null, OutboxMessage.of("t", "k", "polled"));
            assertThat(broker.delegate.awaitDelivered(1, WAIT)).isTrue();
        }
        assertThat(store.commitWatches()).isZero();
    }

    @Test
    void aBacklogDrainedInFullReadsKeepsTheBrokersBatching() {
        InMemoryStore store = new InMemoryStore();
        store.commitNotifications(true);
        List<OutboxMessage> backlog = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {
            backlog.add(OutboxMessage.of("t", "k" + (i % 50), String.valueOf(i)));
        }
        store.publisher().publish(null, backlog);
        CountingBroker broker = new CountingBroker();
        DispatcherConfig config = slowPolling().markBatchSize(100).maxInFlightRecords(200).build();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).config(config).name("drain").build()) {
            dispatcher.start();
            assertThat(broker.delegate.awaitDelivered(5_000, WAIT)).isTrue();
            // Reads are full until the last one, so nothing hurries while the backlog lasts (100 rounds of sends, one
            // record per key in flight). After the last read, the records still queued (at most 200, 4 a key) go out
            // in a few rounds, each of which may hurry if nothing was in flight when it was taken.
            assertThat(broker.sendPending.get()).as("sendPending calls while draining 5,000 records")
                    .isLessThanOrEqualTo(10);
        }
    }
}
