package dev.outbox.testkit;

import dev.outbox.ParkedRecord;
import dev.outbox.OutboxRecord;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The checks of {@link DispatcherOptionsFaultInjectionTest} that the delivery options amend: not before, idempotency,
 * G2 and G1 (published, parked or superseded). Messages are named {@code <key>:<value>} ({@link OptionsWriters}).
 * Each assertion's description starts with the guarantee it checks, which the planted-bug tests look for.
 */
final class OptionsGuaranteeChecks {
    private final OptionsWriters writers;
    private final List<OutboxRecord> delivered;
    private final Map<String, Instant> firstSend;
    private final Map<String, Long> superseded;
    private final Map<Long, String> supersededIds;
    private final Map<Long, String> deliveredIds = new HashMap<>();
    private final Map<Long, String> parkedIds = new HashMap<>();
    private final Set<String> published = new HashSet<>();

    /**
     * @param writers       what was written
     * @param delivered     what the broker accepted, in its order
     * @param firstSend     each message's first send (by name), on the store's clock
     * @param superseded    what the observers were told was superseded: name to the newer record's id
     * @param supersededIds the superseded records: id to name
     * @param store         the wrapped store, for its parked rows
     */
    OptionsGuaranteeChecks(OptionsWriters writers, List<OutboxRecord> delivered, Map<String, Instant> firstSend,
                           Map<String, Long> superseded, Map<Long, String> supersededIds, InMemoryStore store) {
        this.writers = writers;
        this.delivered = delivered;
        this.firstSend = firstSend;
        this.superseded = superseded;
        this.supersededIds = supersededIds;
        for (OutboxRecord r : delivered) {
            deliveredIds.put(r.id(), DispatcherOptionsFaultInjectionTest.name(r));
            published.add(DispatcherOptionsFaultInjectionTest.name(r));
        }
        for (ParkedRecord p : store.parkedRows()) {
            store.parkedMessage(p.id()).ifPresent(m -> parkedIds.put(p.id(),
                    p.key() + ":" + new String(m.value(), StandardCharsets.UTF_8)));
        }
    }

    /** All of them, in an order that lets each planted bug be named by its own check. */
    void check() {
        notBefore();
        idempotency();
        perKeyOrder();
        noLoss();
    }

    private void notBefore() {
        List<String> early = new ArrayList<>();
        writers.due.forEach((name, due) -> {
            Instant sent = firstSend.get(name);
            if (sent != null && sent.isBefore(due)) {
                early.add(name + " " + Duration.between(sent, due).toMillis() + " ms early");
            }
        });
        assertThat(early).as("not before: delayed messages sent before their time by the store's clock").isEmpty();
    }

    private void idempotency() {
        Set<String> reached = new HashSet<>(firstSend.keySet());
        reached.addAll(superseded.keySet());
        reached.addAll(parkedIds.values());
        List<String> leaked = new ArrayList<>(writers.notWritten);
        leaked.retainAll(reached);
        assertThat(leaked).as("idempotency: duplicates skipped or refused (or rolled back) that reached the broker")
                .isEmpty();
        Map<String, Set<String>> byKey = new TreeMap<>();
        for (String name : reached) {
            String key = writers.idempotencyKeys.get(name);
            if (key != null) {
                byKey.computeIfAbsent(key, k -> new HashSet<>()).add(name);
            }
        }
        byKey.values().removeIf(names -> names.size() < 2);
        assertThat(byKey).as("idempotency: idempotency keys whose messages of two writes reached the broker")
                .isEmpty();
        for (List<String> pair : writers.races) {
            assertThat(pair.stream().filter(this::accounted).count())
                    .as("idempotency: of the racing writes %s, exactly one written and published", pair).isOne();
        }
    }

    private void perKeyOrder() {
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (OutboxRecord r : delivered) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>())
                    .add(Integer.parseInt(new String(r.message().value(), StandardCharsets.UTF_8)));
        }
        byKey.forEach((key, values) -> assertThat(values).as("G2: values of key %s in broker order", key).isSorted());
    }

    private void noLoss() {
        List<String> missing = new ArrayList<>();
        writers.committed.keySet().forEach(name -> {
            if (!accounted(name)) {
                missing.add(name + (superseded.containsKey(name) ? " (superseded by " + superseded.get(name)
                        + ", which was not published)" : ""));
            }
        });
        assertThat(missing).as("G1: committed messages neither published, parked nor superseded").isEmpty();
        assertThat(superseded.keySet()).as("G1: only latest-only messages are superseded")
                .allMatch(writers.latestOnly::contains);
    }

    /** Published, parked, or superseded by a newer record of its key that is itself accounted for. */
    private boolean accounted(String name) {
        if (published.contains(name) || parkedIds.containsValue(name)) {
            return true;
        }
        String key = name.substring(0, name.lastIndexOf(':'));
        String current = name;
        for (int hops = 0; hops < 10_000; hops++) {
            Long newer = superseded.get(current);
            if (newer == null) {
                return false;
            }
            String next = deliveredIds.getOrDefault(newer, parkedIds.get(newer));
            if (next != null) {
                return next.startsWith(key + ":");
            }
            next = supersededIds.get(newer);
            if (next == null || !next.startsWith(key + ":")) {
                return false;
            }
            current = next;
        }
        return false;
    }

    /** How long after their time the delayed messages reached the broker: the median and the most. */
    static String lateness(Map<String, Instant> due, Map<String, Instant> firstSend) {
        List<Long> micros = new ArrayList<>();
        due.forEach((name, at) -> {
            Instant sent = firstSend.get(name);
            if (sent != null) {
                micros.add(Duration.between(at, sent).toNanos() / 1_000);
            }
        });
        if (micros.isEmpty()) {
            return "none sent";
        }
        micros.sort(Long::compare);
        return String.format("after their time: min %.1f ms, p50 %.1f ms, max %.1f ms", micros.get(0) / 1000.0,
                micros.get(micros.size() / 2) / 1000.0,
                micros.get(micros.size() - 1) / 1000.0);
    }
}
