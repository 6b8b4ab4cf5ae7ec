package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherConfig.AfterPark;
import dev.outbox.Header;
import dev.outbox.KeySequence;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The dispatcher's part of the per-key sequence ({@link KeySequence}): with {@code AfterPark.MOVE_ON}, the first
 * record of a key sent after records of that key were parked carries their sequence numbers in
 * {@value KeySequence#SKIPPED}, until one carrying them is acknowledged — a retried carrier carries them again, a
 * parked carrier hands them on with its own. With {@code HOLD_KEY}, and for records without a sequence number,
 * nothing is added.
 */
class DispatcherSkippedSequenceTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void close() {
        dispatchers.forEach(Dispatcher::close);
    }

    private static DispatcherConfig.Builder config() {
        return DispatcherConfig.builder()
                .pollInterval(Duration.ofMillis(10))
                .deliveryBackoff(Duration.ofMillis(1))
                .maxDeliveryBackoff(Duration.ofMillis(5))
                .drainTimeout(Duration.ofSeconds(5));
    }

    @Test
    void theNextRecordOfTheKeyCarriesTheParkedNumbersUntilItIsAcknowledged() {
        InMemoryStore store = new InMemoryStore();
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        // seq 2 and 3 are parked (a permanent failure), seq 4 fails once then goes, seq 6 is parked, 7 goes.
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> {
            long seq = seq(r);
            if (seq == 2 || seq == 3 || seq == 6) {
                return Fault.of(Outcome.FAIL_PERMANENT);
            }
            if (seq == 4 && failedOnce.add("4")) {
                return Fault.of(Outcome.FAIL_RETRIABLE);
            }
            return Fault.ACK;
        }).build();
        write(store, "k", 1, 7);
        write(store, "plain", 0, 0); // no sequence header
        start(store, broker, AfterPark.MOVE_ON);
        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "drained: " + store.rows());

        assertThat(sent(broker, "k")).as("seq:skipped of each delivery of key k")
                .containsExactly("1:", "4:2,3", "5:", "7:6");
        assertThat(broker.sendCount()).as("seq 4 was sent twice, both times carrying 2,3").isGreaterThanOrEqualTo(9);
        assertThat(sent(broker, "plain")).containsExactly("-:");
    }

    @Test
    void holdKeyAddsNothing() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder()
                .faults(r -> seq(r) == 2 ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK).build();
        write(store, "k", 1, 3);
        Dispatcher d = start(store, broker, AfterPark.HOLD_KEY);
        Await.untilOrFail(() -> store.parkedRows().size() == 1 && d.health().heldKeys() == 1 && broker.deliveredCount() == 1,
                WAIT, () -> "parked " + store.parkedRows() + ", delivered " + broker.delivered());
        assertThat(sent(broker, "k")).containsExactly("1:");
    }

    private Dispatcher start(InMemoryStore store, InMemoryBroker broker, AfterPark afterPark) {
        Dispatcher d = Dispatcher.builder(store, broker).config(config().afterPark(afterPark).build())
                .name("skipped-" + afterPark).build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    /** Writes records of {@code key} with sequence numbers {@code from}..{@code to}; 0..0 writes one without. */
    private static void write(InMemoryStore store, String key, long from, long to) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (long seq = from; seq <= to; seq++) {
                OutboxMessage m = OutboxMessage.of("t", key, "v" + seq);
                tx.write(seq == 0 ? m : m.withHeader(Header.of(KeySequence.SEQUENCE, KeySequence.encode(seq))));
            }
            tx.commit();
        }
    }

    private static long seq(OutboxRecord r) {
        byte[] v = KeySequence.last(r.message().headers(), KeySequence.SEQUENCE);
        return v == null ? 0 : KeySequence.decode(KeySequence.SEQUENCE, v);
    }

    private static List<String> sent(InMemoryBroker broker, String key) {
        List<String> out = new ArrayList<>();
        for (OutboxRecord r : broker.delivered()) {
            if (r.key().equals(key)) {
                byte[] seq = KeySequence.last(r.message().headers(), KeySequence.SEQUENCE);
                byte[] skipped = KeySequence.last(r.message().headers(), KeySequence.SKIPPED);
                out.add((seq == null ? "-" : new String(seq, StandardCharsets.US_ASCII)) + ":"
                        + (skipped == null ? "" : new String(skipped, StandardCharsets.US_ASCII)));
            }
        }
        return out;
    }
}
