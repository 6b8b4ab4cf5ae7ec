package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherHealth.Status;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Health tells the truth about a store the leader cannot read (#42): while every read of the store fails, the
 * leader stays the leader (leadership is the transport's) but is not up, says since when its reads fail, and the time
 * since its last successful read grows; the first successful read makes it up again. Both harvests, on the in-memory
 * store with a fault plan that fails the harvest's reads (and the gauges, as a stopped database would).
 */
class DispatcherStoreOutageHealthTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** What a stopped database fails: the harvest's reads and the leader's samples. */
    private static final Set<Operation> DOWN = Set.of(Operation.MARK, Operation.READ, Operation.BACKLOG,
            Operation.PARKED_COUNT, Operation.OLDEST, Operation.PURGE, Operation.RESET, Operation.RETRY_LATER,
            Operation.PARK, Operation.PARKED, Operation.ACQUIRE_EPOCH);

    @Test
    void aCursorLeaderWhoseStoreFailsEveryReadIsNotUpAndSaysSinceWhenUntilAReadSucceeds() {
        leaderWithoutItsStore(DispatcherConfig.Harvest.CURSOR);
    }

    @Test
    void aMarkLeaderWhoseStoreFailsEveryMarkIsNotUpAndSaysSinceWhenUntilAMarkSucceeds() {
        leaderWithoutItsStore(DispatcherConfig.Harvest.MARK);
    }

    private static void leaderWithoutItsStore(DispatcherConfig.Harvest harvest) {
        InMemoryStore store = new InMemoryStore();
        AtomicBoolean down = new AtomicBoolean();
        store.setFaults(op -> down.get() && DOWN.contains(op) ? Fault.failBefore() : Fault.NONE);
        DispatcherConfig config = DispatcherConfig.builder().harvest(harvest).pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1)).ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50)).metricsInterval(Duration.ofMillis(50)).build();
        try (Dispatcher d = Dispatcher.builder(store, new InMemoryBroker()).config(config).name("outage-" + harvest)
                .build()) {
            d.start();
            write(store, 50);
            Await.untilOrFail(() -> store.backlog() == 0 && d.health().isUp()
                    && d.health().sinceLastRead().isPresent(), WAIT, () -> "drained and up: " + d.health());
            DispatcherHealth healthy = d.health();
            assertThat(healthy.status()).isEqualTo(Status.LEADER);
            assertThat(healthy.storeUnreachableSince()).isEmpty();
            assertThat(healthy.sinceLastRead().orElseThrow()).as("an idle leader reads every pollInterval")
                    .isLessThan(Duration.ofSeconds(2));

            Instant stopped = Instant.now();
            down.set(true);
            write(store, 10); // committed while the store cannot be read: published once it can
            Await.untilOrFail(() -> !d.health().isUp(), WAIT, () -> "health left LEADER/up: " + d.health());
            DispatcherHealth unreachable = d.health();
            assertThat(unreachable.status()).as("it still leads: leadership is not the store's")
                    .isEqualTo(Status.LEADER);
            assertThat(unreachable.storeUnreachableSince()).hasValueSatisfying(since ->
                    assertThat(since).isAfterOrEqualTo(stopped.minusMillis(5)));
            assertThat(unreachable.lastFailure()).isPresent();
            Duration first = unreachable.sinceLastRead().orElseThrow();
            Await.untilOrFail(() -> d.health().sinceLastRead().orElseThrow().compareTo(first.plusMillis(300)) > 0,
                    WAIT, () -> "the time since the last read grows past " + first + ": " + d.health());
            assertThat(d.health().isUp()).isFalse();

            down.set(false);
            Await.untilOrFail(() -> d.health().isUp() && store.backlog() == 0, WAIT,
                    () -> "up again and drained: " + d.health());
            DispatcherHealth back = d.health();
            assertThat(back.storeUnreachableSince()).isEmpty();
            assertThat(back.sinceLastRead().orElseThrow()).isLessThan(Duration.ofSeconds(2));
        }
    }

    /** A dispatcher that does not lead (here: closed) reports neither figure: they are the leader's. */
    @Test
    void aClosedDispatcherReportsNeitherFigure() {
        InMemoryStore store = new InMemoryStore();
        Dispatcher d = Dispatcher.builder(store, new InMemoryBroker()).name("outage-closed").build();
        d.start();
        Await.untilOrFail(() -> d.health().status() == Status.LEADER, WAIT, () -> "leads: " + d.health());
        d.close();
        assertThat(d.health().sinceLastRead()).isEmpty();
        assertThat(d.health().storeUnreachableSince()).isEmpty();
        assertThat(d.health().isUp()).isFalse();
    }

    private static void write(InMemoryStore store, int count) {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(OutboxMessage.of("t", "k" + (i % 5), String.valueOf(i)));
        }
        store.publisher().publish(null, batch);
    }
}
