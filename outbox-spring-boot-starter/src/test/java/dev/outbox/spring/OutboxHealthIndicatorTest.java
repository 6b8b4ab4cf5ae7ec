package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Actuator indicator tells the truth about a leader that cannot read its store (#42): DOWN, with since when and
 * the time since its last read, while every read fails; UP again once one succeeds. On the in-memory store with a
 * fault plan.
 */
class OutboxHealthIndicatorTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void aLeaderThatCannotReadItsStoreIsDownWithSinceWhenAndUpAgainOnceItReads() {
        InMemoryStore store = new InMemoryStore();
        AtomicBoolean down = new AtomicBoolean();
        store.setFaults(op -> down.get() && (op == Operation.READ || op == Operation.OLDEST) ? Fault.failBefore()
                : Fault.NONE);
        DispatcherConfig config = DispatcherConfig.builder().pollInterval(Duration.ofMillis(10))
                .ioErrorBackoff(Duration.ofMillis(5)).maxIoErrorBackoff(Duration.ofMillis(50)).build();
        try (Dispatcher d = Dispatcher.builder(store, new InMemoryBroker()).config(config).name("indicator")
                .build()) {
            OutboxHealthIndicator indicator = new OutboxHealthIndicator(d);
            d.start();
            Await.untilOrFail(() -> indicator.health().getStatus().equals(Status.UP)
                    && indicator.health().getDetails().containsKey("sinceLastRead"), WAIT,
                    () -> indicator.health().toString());
            assertThat(indicator.health().getDetails()).doesNotContainKey("storeUnreachableSince");

            down.set(true);
            Await.untilOrFail(() -> indicator.health().getStatus().equals(Status.DOWN), WAIT,
                    () -> indicator.health().toString());
            Health unreachable = indicator.health();
            assertThat(unreachable.getDetails()).containsEntry("status", "LEADER").containsKey("storeUnreachableSince")
                    .containsKey("sinceLastRead");

            down.set(false);
            Await.untilOrFail(() -> indicator.health().getStatus().equals(Status.UP), WAIT,
                    () -> indicator.health().toString());
            assertThat(indicator.health().getDetails()).doesNotContainKey("storeUnreachableSince");
        }
    }
}
