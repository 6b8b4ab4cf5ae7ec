package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherObserver;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Latest-only messages ({@link OutboxMessage.Builder#latestOnly()}): a record whose turn to be sent comes while a
 * newer record of its topic and key is queued behind it is purged without a send, told to the observers and counted;
 * the newest goes out, in order after what was sent before; other keys and messages without the header are not
 * touched; with the per-key sequence, the next record sent carries the skipped numbers.
 */
class DispatcherLatestOnlyTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void close() {
        dispatchers.forEach(Dispatcher::close);
    }

    @Test
    void aRecordWithANewerOneOfItsKeyQueuedIsNotSent() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        Map<Long, Long> superseded = new ConcurrentHashMap<>();
        broker.pauseAcks(); // v1 stays in flight while the rest of its key queues up behind it
        write(store, List.of(state("k", "v1", 1)));
        start(store, broker, new DispatcherObserver() {
            @Override
            public void superseded(OutboxRecord record, long newerId) {
                superseded.put(record.id(), newerId);
            }
        });
        Await.untilOrFail(() -> broker.sendCount() == 1, WAIT, () -> "sent: " + broker.sendCount());
        List<Long> ids = write(store, List.of(state("k", "v2", 2), state("k", "v3", 3), state("k", "v4", 4),
                state("alone", "a1", 1), OutboxMessage.of("t", "plain", "p1"), OutboxMessage.of("t", "plain", "p2"),
                OutboxMessage.builder("other-topic", "k").value("o1").latestOnly().build()));
        // a1, p1 and o1 are sent (their keys: nothing in flight) once the read that holds v2..v4 queued them.
        Await.untilOrFail(() -> broker.sendCount() == 3, WAIT, () -> "sent: " + broker.sendCount());
        broker.resumeAcks();
        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "left: " + store.rows());

        assertThat(values(broker, "t", "k")).as("v2 and v3 superseded by v4").containsExactly("v1", "v4");
        assertThat(superseded).containsExactlyInAnyOrderEntriesOf(Map.of(ids.get(0), ids.get(1), ids.get(1),
                ids.get(2)));
        assertThat(values(broker, "t", "alone")).containsExactly("a1");
        assertThat(values(broker, "t", "plain")).as("no header: every record sent").containsExactly("p1", "p2");
        assertThat(values(broker, "other-topic", "k")).as("another topic of the key").containsExactly("o1");
        OutboxRecord v4 = broker.delivered("t").stream().filter(r -> r.key().equals("k")).reduce((a, b) -> b)
                .orElseThrow();
        assertThat(KeySequence.last(v4.message().headers(), KeySequence.SKIPPED)).as("the skipped numbers")
                .isEqualTo("2,3".getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void aParkedLatestOnlyRecordIsDiscardedOnceANewerOneOfItsKeyIsDelivered() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = failing("v1", "w1", "plain1");
        Map<Long, Long> discarded = new ConcurrentHashMap<>();
        List<Long> parked = write(store, List.of(state("k", "v1", 1), state("other", "w1", 1),
                OutboxMessage.of("t", "k", "plain1")));
        start(store, broker, observer(discarded), DispatcherConfig.builder());
        Await.untilOrFail(() -> store.parkedCount() == 3, WAIT, () -> "parked: " + store.parkedRows());
        assertThat(store.parkedRows()).filteredOn(p -> p.id() == parked.get(0)).singleElement()
                .satisfies(p -> assertThat(p.reason()).startsWith("latest only; permanent failure"));

        long v2 = write(store, List.of(state("k", "v2", 2))).get(0);
        Await.untilOrFail(() -> store.parkedCount() == 2, WAIT, () -> "parked: " + store.parkedRows());
        assertThat(values(broker, "t", "k")).containsExactly("v2");
        assertThat(discarded).as("told to the observers").containsExactlyEntriesOf(Map.of(parked.get(0), v2));
        assertThat(store.parkedRows()).extracting(p -> p.id()).as("another key's, and one without the header, stay")
                .containsExactlyInAnyOrder(parked.get(1), parked.get(2));
        assertThat(store.replay(List.of(parked.get(0)))).as("nothing left to replay").isZero();
    }

    @Test
    void withKeepTheParkedRecordStaysForAnOperator() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = failing("v1");
        Map<Long, Long> discarded = new ConcurrentHashMap<>();
        long v1 = write(store, List.of(state("k", "v1", 1))).get(0);
        start(store, broker, observer(discarded), DispatcherConfig.builder()
                .supersededParked(DispatcherConfig.SupersededParked.KEEP));
        Await.untilOrFail(() -> store.parkedCount() == 1, WAIT, () -> "parked: " + store.parkedRows());
        write(store, List.of(state("k", "v2", 2), OutboxMessage.of("t", "marker", "m")));
        Await.untilOrFail(() -> broker.deliveredCount() == 2, WAIT, () -> "delivered: " + broker.delivered());
        assertThat(values(broker, "t", "k")).containsExactly("v2");
        assertThat(discarded).isEmpty();
        assertThat(store.parkedRows()).extracting(p -> p.id()).containsExactly(v1);
    }

    @Test
    void aNewLeaderFindsTheParkedLatestOnlyRecordsOfEarlierTerms() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = failing("v1");
        long v1 = write(store, List.of(state("k", "v1", 1))).get(0);
        Dispatcher first = start(store, broker, new DispatcherObserver() { }, DispatcherConfig.builder());
        Await.untilOrFail(() -> store.parkedCount() == 1, WAIT, () -> "parked: " + store.parkedRows());
        first.close();

        Map<Long, Long> discarded = new ConcurrentHashMap<>();
        InMemoryBroker successors = new InMemoryBroker(); // the first dispatcher closed its broker
        start(store, successors, observer(discarded), DispatcherConfig.builder());
        long v2 = write(store, List.of(state("k", "v2", 2))).get(0);
        Await.untilOrFail(() -> store.parkedCount() == 0, WAIT, () -> "parked: " + store.parkedRows()
                + ", delivered: " + successors.delivered());
        assertThat(discarded).containsExactlyEntriesOf(Map.of(v1, v2));
        assertThat(values(successors, "t", "k")).containsExactly("v2");
    }

    @Test
    void withHeldKeysAReplayedRecordIsSupersededByTheKeysWaitingRecords() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = failing("v1");
        Map<Long, Long> superseded = new ConcurrentHashMap<>();
        long v1 = write(store, List.of(state("k", "v1", 1))).get(0);
        start(store, broker, new DispatcherObserver() {
            @Override
            public void superseded(OutboxRecord record, long newerId) {
                superseded.put(record.id(), newerId);
            }
        }, DispatcherConfig.builder().afterPark(DispatcherConfig.AfterPark.HOLD_KEY));
        Await.untilOrFail(() -> store.parkedCount() == 1, WAIT, () -> "parked: " + store.parkedRows());
        write(store, List.of(state("k", "v2", 2), OutboxMessage.of("t", "marker", "m")));
        Await.untilOrFail(() -> broker.deliveredCount() == 1, WAIT, () -> "delivered: " + broker.delivered());
        assertThat(values(broker, "t", "k")).as("held").isEmpty();

        assertThat(store.replay(List.of(v1))).isOne();
        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "left: " + store.rows());
        assertThat(values(broker, "t", "k")).as("the replayed v1 went first, superseded by v2").containsExactly("v2");
        assertThat(superseded).hasSize(1);
        assertThat(store.parkedCount()).isZero();
    }

    /** A broker that fails the records with these values permanently, once each (they are parked). */
    private static InMemoryBroker failing(String... values) {
        Set<String> failOnce = ConcurrentHashMap.newKeySet();
        failOnce.addAll(List.of(values));
        return InMemoryBroker.builder().faults(r -> r.message().value() != null
                && failOnce.remove(new String(r.message().value(), StandardCharsets.UTF_8))
                ? BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_PERMANENT) : BrokerFaults.Fault.ACK).build();
    }

    private static DispatcherObserver observer(Map<Long, Long> discarded) {
        return new DispatcherObserver() {
            @Override
            public void parkedSuperseded(ParkedRecord record, long newerId) {
                discarded.put(record.id(), newerId);
            }
        };
    }

    private static OutboxMessage state(String key, String value, long seq) {
        return OutboxMessage.builder("t", key).value(value).latestOnly()
                .header(KeySequence.SEQUENCE, new String(KeySequence.encode(seq), StandardCharsets.US_ASCII)).build();
    }

    private static List<Long> write(InMemoryStore store, List<OutboxMessage> messages) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            List<Long> ids = new ArrayList<>();
            for (OutboxMessage m : messages) {
                ids.add(tx.write(m));
            }
            tx.commit();
            return ids;
        }
    }

    private void start(InMemoryStore store, InMemoryBroker broker, DispatcherObserver observer) {
        start(store, broker, observer, DispatcherConfig.builder());
    }

    private Dispatcher start(InMemoryStore store, InMemoryBroker broker, DispatcherObserver observer,
                             DispatcherConfig.Builder config) {
        Dispatcher d = Dispatcher.builder(store, broker).observer(observer).config(config
                .pollInterval(Duration.ofMillis(10)).drainTimeout(Duration.ofSeconds(5)).build())
                .name("latest-only").build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    private static List<String> values(InMemoryBroker broker, String topic, String key) {
        return broker.delivered(topic).stream().filter(r -> r.key().equals(key))
                .map(r -> new String(r.message().value(), StandardCharsets.UTF_8)).toList();
    }
}
