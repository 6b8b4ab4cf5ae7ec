package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxRecord;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the seeded fault-injection tests ({@link DispatcherFaultInjectionTest}, {@link
 * DispatcherOptionsFaultInjectionTest}) share: the leadership chaos while the writers write, and the G4 check of
 * the duplicates.
 */
final class FaultInjectionRuns {
    private static final Duration WAIT = Duration.ofSeconds(60);

    /** The duplicates of a run: all the extra deliveries, those of records whose acknowledgement was not lost. */
    record Duplicates(int all, int other, List<Long> unexplained) {
    }

    private FaultInjectionRuns() {
    }

    /**
     * Leadership changes of every kind — a hand-over, a lost owner whose sends end before the next one is assigned, a
     * stalled group that fences the leader — while any writer is alive, and at least three; between two, traffic flows.
     */
    static void changeLeaders(Random random, InMemoryLeaderGroup group, List<Dispatcher> dispatchers,
                              InMemoryBroker shared, List<Thread> writers) {
        int changes = 0;
        while (writers.stream().anyMatch(Thread::isAlive) || changes < 3) {
            int before = shared.deliveredCount();
            int traffic = 10 + random.nextInt(60);
            Await.until(() -> shared.deliveredCount() >= before + traffic, Duration.ofSeconds(2)); // let traffic flow
            switch (random.nextInt(3)) {
                case 0 -> group.reassign();
                case 1 -> {
                    int owner = group.ownerIndex();
                    if (group.loseOwner() && owner >= 0) {
                        Dispatcher old = dispatchers.get(owner);
                        // What Kafka's timeouts guarantee: the old leader's sends end before a new one starts.
                        Await.untilOrFail(() -> !old.isLeader() && old.inFlightRecords() == 0, WAIT,
                                () -> "old leader did not drain");
                        group.assignNext();
                    }
                }
                default -> {
                    group.stallHeartbeats(true);
                    Await.untilOrFail(() -> dispatchers.stream().noneMatch(Dispatcher::isLeader), WAIT,
                            () -> "stalled leader did not fence");
                    group.stallHeartbeats(false);
                }
            }
            changes++;
        }
    }

    /**
     * G4: a record reaches the broker twice only if its acknowledgement was lost, or a change of leadership or a
     * failed store call (after which the leader rewinds) came while it was in flight: between its first send and its
     * last. Asserts it, and that each dispatcher kept its per-key barrier and in-flight throttle.
     *
     * @return the duplicates counted
     */
    static Duplicates checkDuplicates(List<OutboxRecord> delivered, Set<Long> lostAcks, List<ObservingBroker> observers,
                                      DispatcherTest.Events events, int maxInFlight) {
        Map<Long, Integer> deliveriesById = new HashMap<>();
        delivered.forEach(r -> deliveriesById.merge(r.id(), 1, Integer::sum));
        Map<Long, List<Long>> sendTimes = new HashMap<>();
        for (ObservingBroker o : observers) {
            o.sendTimes().forEach((id, times) -> sendTimes.computeIfAbsent(id, x -> new ArrayList<>()).addAll(times));
        }
        List<Long> disturbances = new ArrayList<>(events.leadershipTimes);
        disturbances.addAll(events.failureTimes);
        int all = 0;
        int other = 0;
        List<Long> unexplained = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : deliveriesById.entrySet()) {
            int extra = e.getValue() - 1;
            all += extra;
            if (extra > 0 && !lostAcks.contains(e.getKey())) {
                other += extra;
                List<Long> times = sendTimes.getOrDefault(e.getKey(), List.of());
                long first = times.stream().min(Long::compare).orElse(Long.MAX_VALUE);
                long last = times.stream().max(Long::compare).orElse(Long.MIN_VALUE);
                if (disturbances.stream().noneMatch(t -> t - first >= 0 && last - t >= 0)) {
                    unexplained.add(e.getKey());
                }
            }
        }
        assertThat(unexplained).as("G4: records delivered twice with no lost acknowledgement, change of leadership"
                + " or store failure while they were in flight").isEmpty();
        for (ObservingBroker o : observers) {
            assertThat(o.maxPerKey()).as("per-key barrier").isLessThanOrEqualTo(1);
            assertThat(o.maxInFlight()).as("in-flight throttle").isLessThanOrEqualTo(maxInFlight);
        }
        return new Duplicates(all, other, unexplained);
    }
}
