package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth.Status;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fenced leader whose leadership the group moved on is a standby again, and leads again when the group assigns it
 * anew (#42): as a leader paused past its lease and resumed finds itself, once its transport hears that the group
 * dropped it (its session lost) or revoked it. Before, it reported FENCED until it was closed.
 */
class DispatcherFencedRejoinTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void closeAll() {
        dispatchers.forEach(Dispatcher::close);
    }

    @Test
    void aFencedLeaderThatLostTheGroupStandsByAndLeadsAgainLater() {
        fencedThenMovedOn(true);
    }

    @Test
    void aFencedLeaderWhoseAssignmentWasRevokedStandsByAndLeadsAgainLater() {
        fencedThenMovedOn(false);
    }

    private void fencedThenMovedOn(boolean lost) {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        DispatcherConfig config = DispatcherConfig.builder().pollInterval(Duration.ofMillis(10))
                .heartbeatTimeout(Duration.ofMillis(300)).drainTimeout(Duration.ofSeconds(2)).build();
        List<Status> firstStatuses = new CopyOnWriteArrayList<>();
        List<Status> secondStatuses = new CopyOnWriteArrayList<>();
        Dispatcher first = start(Dispatcher.builder(store, broker).config(config).name("rejoin-1")
                .leaderTransport(group.newMember()).observer(recording(firstStatuses)));
        Dispatcher second = start(Dispatcher.builder(store, broker).config(config).name("rejoin-2")
                .leaderTransport(group.newMember()).observer(recording(secondStatuses)));
        group.assignNext();
        Await.untilOrFail(() -> first.health().status() == Status.LEADER && second.health().status() == Status.STANDBY
                || second.health().status() == Status.LEADER && first.health().status() == Status.STANDBY,
                WAIT, () -> first.health() + " / " + second.health());
        boolean firstLeads = first.health().status() == Status.LEADER;
        Dispatcher a = firstLeads ? first : second; // the leader that will be paused
        Dispatcher b = firstLeads ? second : first;
        List<Status> aStatuses = firstLeads ? firstStatuses : secondStatuses;

        group.stallHeartbeats(true); // a's lease lapses, as a paused process's would
        Await.untilOrFail(() -> a.health().status() == Status.FENCED, WAIT, () -> a.health().toString());
        if (lost) {
            assertThat(group.loseOwner()).isTrue();
        } else {
            assertThat(group.reassign()).isTrue();
        }
        group.stallHeartbeats(false);
        Await.untilOrFail(() -> a.health().status() == Status.STANDBY, WAIT,
                () -> "the fenced instance stands by again: " + a.health());
        assertThat(a.health().isUp()).isTrue();
        group.assignNext(); // b, when a was lost; when revoked, b was assigned already (a group of two)
        Await.untilOrFail(() -> b.health().status() == Status.LEADER, WAIT, () -> b.health().toString());
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "k", "by b")));
        Await.untilOrFail(() -> store.backlog() == 0, WAIT, () -> "b publishes, backlog " + store.backlog());
        assertThat(a.health().status()).isEqualTo(Status.STANDBY);

        assertThat(group.reassign()).as("b hands over to the other member: a").isTrue();
        Await.untilOrFail(() -> a.health().status() == Status.LEADER, WAIT,
                () -> "the rejoined instance leads again: " + a.health());
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "k", "by a")));
        Await.untilOrFail(() -> store.backlog() == 0, WAIT, () -> "a publishes again, backlog " + store.backlog());
        assertThat(aStatuses).containsSubsequence(Status.LEADER, Status.FENCED, Status.STANDBY, Status.LEADER);
    }

    private static DispatcherObserver recording(List<Status> statuses) {
        return new DispatcherObserver() {
            @Override
            public void statusChanged(Status status) {
                statuses.add(status);
            }
        };
    }

    private Dispatcher start(Dispatcher.Builder builder) {
        Dispatcher d = builder.build();
        dispatchers.add(d);
        d.start();
        return d;
    }
}
