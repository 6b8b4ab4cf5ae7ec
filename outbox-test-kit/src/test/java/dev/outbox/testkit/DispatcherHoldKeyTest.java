package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherConfig.AfterPark;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code DispatcherConfig.afterPark(HOLD_KEY)} over the in-memory fakes: a parked record holds its key (only its key)
 * until an operator replays or discards it; a replay sends the parked record first, then the key's held records, in
 * order; a new leader keeps the hold, since it reads it from the parked table. Absence is shown by counting, not by
 * timing: the held key's records stay undelivered while records of other keys written after them are delivered and
 * the leader has read the parked keys again.
 */
class DispatcherHoldKeyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int KEYS = 50;

    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void close() {
        dispatchers.forEach(Dispatcher::close);
    }

    private static DispatcherConfig.Builder config() {
        return DispatcherConfig.builder()
                .markBatchSize(50)
                .maxInFlightRecords(200)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .heartbeatTimeout(Duration.ofMillis(300))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .drainTimeout(Duration.ofSeconds(5))
                .metricsInterval(Duration.ofMillis(50))
                .afterPark(AfterPark.HOLD_KEY);
    }

    @Test
    void aParkedRecordHoldsOnlyItsKeyAndAReplaySendsItFirstThenTheHeldRecordsInOrder() {
        InMemoryStore store = new InMemoryStore();
        AtomicBoolean poisonFails = new AtomicBoolean(true);
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> poisonFails.get() && r.key().equals("poison")
                && value(r).equals("p0") ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK).build();
        write(store, "poison", "p0", "p1", "p2");
        writeHealthy(store, 0);
        Dispatcher d = start(Dispatcher.builder(store, broker).config(config().build()).name("hold"));

        Await.untilOrFail(() -> store.parkedRows().size() == 1 && healthy(broker) == KEYS, WAIT,
                () -> "parked " + store.parkedRows() + ", healthy delivered " + healthy(broker));
        assertHeld(store, broker, d, 1);
        write(store, "poison", "p3"); // written while held: waits too
        writeHealthy(store, 1);
        Await.untilOrFail(() -> healthy(broker) == 2 * KEYS, WAIT, () -> "healthy " + healthy(broker));
        assertHeld(store, broker, d, 2);

        poisonFails.set(false); // the operator fixed the cause
        assertThat(store.replay(store.parkedRows().stream().map(ParkedRecord::id).toList())).isEqualTo(1);
        Await.untilOrFail(() -> store.size() == 0 && d.health().heldKeys() == 0, WAIT,
                () -> "released: " + store.rows() + ", " + d.health());
        assertThat(poison(broker)).as("the replayed record first, then the held ones, in order")
                .containsExactly("p0", "p1", "p2", "p3");
        assertHealthyInOrder(broker, 2);

        // Released: the key flows again.
        write(store, "poison", "p4");
        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "drained: " + store.rows());
        assertThat(poison(broker)).endsWith("p4");
    }

    @Test
    void aNewLeaderKeepsTheHoldFromTheParkedTable() {
        InMemoryStore store = new InMemoryStore();
        AtomicBoolean poisonFails = new AtomicBoolean(true);
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> poisonFails.get() && r.key().equals("poison")
                && value(r).equals("p0") ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK).build();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        Dispatcher first = start(Dispatcher.builder(store, broker).config(config().build())
                .leaderTransport(group.newMember()).name("hold-a"));
        Await.untilOrFail(first::isLeader, WAIT, () -> "never led");
        Dispatcher second = start(Dispatcher.builder(store, broker).config(config().build())
                .leaderTransport(group.newMember()).name("hold-b"));
        write(store, "poison", "p0", "p1");
        writeHealthy(store, 0);
        Await.untilOrFail(() -> store.parkedRows().size() == 1 && healthy(broker) == KEYS, WAIT,
                () -> "parked " + store.parkedRows() + ", healthy delivered " + healthy(broker));
        // The parked row is visible in the store a moment before the park call returns and the leader holds its key.
        Await.untilOrFail(() -> first.health().heldKeys() == 1, WAIT, () -> "held " + first.health().heldKeys());

        group.reassign();
        Await.untilOrFail(second::isLeader, WAIT, () -> "the second never led");
        write(store, "poison", "p2");
        writeHealthy(store, 1);
        Await.untilOrFail(() -> healthy(broker) == 2 * KEYS, WAIT, () -> "healthy " + healthy(broker));
        assertHeld(store, broker, second, 2);
        assertThat(first.health().heldKeys()).as("only the leader holds").isZero();

        poisonFails.set(false);
        store.replay(store.parkedRows().stream().map(ParkedRecord::id).toList());
        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "released: " + store.rows());
        assertThat(poison(broker)).containsExactly("p0", "p1", "p2");
        assertHealthyInOrder(broker, 2);
    }

    @Test
    void aNewLeaderHoldsAKeyParkedBeforeItStartedAndMoveOnDoesNot() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> r.key().equals("poison") && value(r).equals("p0")
                ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK).build();
        write(store, "poison", "p0", "p1");
        try (Dispatcher moveOn = Dispatcher.builder(store, broker).config(config().afterPark(AfterPark.MOVE_ON)
                .build()).name("move-on").build()) {
            moveOn.start();
            Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "drained: " + store.rows());
            assertThat(moveOn.health().heldKeys()).isZero();
        }
        assertThat(poison(broker)).as("MOVE_ON: the key moved on").containsExactly("p1");

        write(store, "poison", "p2");
        writeHealthy(store, 0);
        InMemoryBroker later = InMemoryBroker.builder().build(); // closing a dispatcher closes its broker
        Dispatcher hold = start(Dispatcher.builder(store, later).config(config().build()).name("hold-later"));
        Await.untilOrFail(() -> healthy(later) == KEYS, WAIT, () -> "healthy " + healthy(later));
        assertHeld(store, later, hold, 1);
        assertThat(poison(later)).isEmpty();
    }

    @Test
    void holdKeyNeedsAStoreThatSupportsIt() {
        InMemoryStreamStore stream = new InMemoryStreamStore(new InMemoryCommitLog(Clock.systemUTC()), "stream",
                Clock.systemUTC(), Duration.ofSeconds(1));
        assertThat(stream.capability(dev.outbox.spi.ParkedKeys.class).isPresent()).isFalse();
        assertThatThrownBy(() -> Dispatcher.builder(stream, InMemoryBroker.builder().build())
                .config(config().build()).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("afterPark HOLD_KEY").hasMessageContaining("ParkedKeys");
    }

    /**
     * The poison key is held: none of its records after the parked one was delivered, although the leader read
     * the parked keys at least twice more after every healthy record of round {@code rounds} was delivered.
     */
    private static void assertHeld(InMemoryStore store, InMemoryBroker broker, Dispatcher leader, int rounds) {
        long reads = store.calls(Operation.PARKED);
        Await.untilOrFail(() -> store.calls(Operation.PARKED) >= reads + 2, WAIT, () -> "parked keys read again");
        assertThat(leader.health().heldKeys()).isEqualTo(1);
        assertThat(poison(broker)).as("held").doesNotContain("p1", "p2", "p3");
        assertThat(healthy(broker)).isEqualTo(rounds * KEYS);
    }

    private Dispatcher start(Dispatcher.Builder builder) {
        Dispatcher d = builder.build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    private static void write(InMemoryStore store, String key, String... values) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (String v : values) {
                tx.write(OutboxMessage.of("t", key, v));
            }
            tx.commit();
        }
    }

    private static void writeHealthy(InMemoryStore store, int round) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (int k = 0; k < KEYS; k++) {
                tx.write(OutboxMessage.of("t", "k" + k, String.valueOf(round)));
            }
            tx.commit();
        }
    }

    private static void assertHealthyInOrder(InMemoryBroker broker, int rounds) {
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (OutboxRecord r : broker.delivered()) {
            if (!r.key().equals("poison")) {
                byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(value(r)));
            }
        }
        assertThat(byKey).hasSize(KEYS).allSatisfy((k, values) -> assertThat(values).isSorted().hasSize(rounds));
    }

    private static String value(OutboxRecord r) {
        return new String(r.message().value(), StandardCharsets.UTF_8);
    }

    private static int healthy(InMemoryBroker broker) {
        return (int) broker.delivered().stream().filter(r -> !r.key().equals("poison")).count();
    }

    private static List<String> poison(InMemoryBroker broker) {
        return broker.delivered().stream().filter(r -> r.key().equals("poison")).map(DispatcherHoldKeyTest::value)
                .toList();
    }
}
