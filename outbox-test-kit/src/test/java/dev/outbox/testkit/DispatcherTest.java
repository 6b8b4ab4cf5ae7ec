package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Functional tests of the dispatcher over the in-memory fakes, one behaviour each. */
class DispatcherTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final List<Dispatcher> dispatchers = new ArrayList<>();
    private final List<InMemoryBroker> brokers = new ArrayList<>();
    private final Events events = new Events();

    private static DispatcherConfig.Builder fastConfig() {
        return DispatcherConfig.builder()
                .markBatchSize(50)
                .maxInFlightRecords(200)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .heartbeatTimeout(Duration.ofMillis(300))
                .ioErrorBackoff(Duration.ofMillis(5))
                .maxIoErrorBackoff(Duration.ofMillis(50))
                .drainTimeout(Duration.ofSeconds(5))
                .metricsInterval(Duration.ofMillis(50));
    }

    private String newName() {
        return "dt" + NAMES.incrementAndGet();
    }

    private Dispatcher start(InMemoryStore store, InMemoryBroker broker, DispatcherConfig config, String name) {
        brokers.add(broker);
        Dispatcher d = Dispatcher.builder(store, broker).config(config).listener(events).name(name).build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    @AfterEach
    void tearDown() {
        dispatchers.forEach(Dispatcher::close);
        brokers.forEach(b -> b.close(Duration.ofSeconds(1)));
    }

    private static void write(InMemoryStore store, int count, int keys) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (int i = 0; i < count; i++) {
                tx.publish(List.of(OutboxMessage.of("t", "k" + (i % keys), String.valueOf(i))));
            }
            tx.commit();
        }
    }

    private static Map<String, List<Integer>> valuesByKey(List<OutboxRecord> delivered) {
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (OutboxRecord r : delivered) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>())
                    .add(Integer.parseInt(new String(r.message().value())));
        }
        return byKey;
    }

    /** A wall clock an operator or NTP steps while the dispatcher runs. */
    static final class SteppedClock extends java.time.Clock {
        private volatile Duration offset = Duration.ZERO;

        void step(Duration d) {
            offset = offset.plus(d);
        }

        @Override
        public java.time.ZoneId getZone() {
            return java.time.ZoneOffset.UTC;
        }

        @Override
        public java.time.Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public java.time.Instant instant() {
            return java.time.Instant.now().plus(offset);
        }
    }

    @Test
    void steppingTheWallClockForwardsOrBackwardsNeitherFencesNorStopsTheLeader() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        brokers.add(broker);
        SteppedClock clock = new SteppedClock();
        Dispatcher d = Dispatcher.builder(store, broker).config(fastConfig().build()).listener(events)
                .clock(clock).name(newName()).build();
        dispatchers.add(d);
        d.start();
        Await.untilOrFail(d::isLeader, WAIT, () -> d.health().toString());
        writeFrom(store, 0, 100, 10);
        Await.untilOrFail(() -> broker.deliveredCount() == 100, WAIT, store::toString);

        clock.step(Duration.ofHours(1)); // far beyond the 300 ms heartbeat timeout, forwards
        writeFrom(store, 100, 100, 10);
        Await.untilOrFail(() -> broker.deliveredCount() == 200, WAIT, store::toString);
        clock.step(Duration.ofHours(-2)); // and backwards
        writeFrom(store, 200, 100, 10);
        Await.untilOrFail(() -> broker.deliveredCount() == 300 && store.size() == 0, WAIT, store::toString);

        assertThat(events.fenced.get()).as("fences").isZero();
        assertThat(events.acquired).as("leadership acquired once").hasSize(1);
        assertThat(valuesByKey(broker.delivered()).values()).allSatisfy(values ->
                assertThat(values).isSorted().hasSize(30));
    }

    private static void writeFrom(InMemoryStore store, int first, int count, int keys) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (int i = first; i < first + count; i++) {
                tx.publish(List.of(OutboxMessage.of("t", "k" + (i % keys), String.valueOf(i))));
            }
            tx.commit();
        }
    }

    /**
     * Storage fencing: another dispatcher takes the outbox's epoch between this leader's taking it and its first
     * purge. The purge is refused and changes nothing; the leader stands down, takes a new epoch (its own election
     * still says it leads), reads the rows again and delivers every one.
     */
    @Test
    void aPurgeRefusedAsFencedStandsTheLeaderDownUntilItTakesANewEpoch() {
        InMemoryStore store = new InMemoryStore();
        store.setFencing(true);
        java.util.concurrent.atomic.AtomicBoolean bumped = new java.util.concurrent.atomic.AtomicBoolean();
        store.setFaults(op -> {
            if (op == StoreFaults.Operation.PURGE && bumped.compareAndSet(false, true)) {
                store.acquireEpoch(); // a successor's, just before this purge
            }
            return StoreFaults.Fault.NONE;
        });
        InMemoryBroker broker = new InMemoryBroker();
        Dispatcher d = start(store, broker, fastConfig().build(), newName());
        Await.untilOrFail(d::isLeader, WAIT, () -> d.health().toString());
        writeFrom(store, 0, 100, 10);

        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        // The purges of every batch under way with the earlier epoch are refused, however many.
        assertThat(store.fencedWrites()).as("purges refused as fenced").isPositive();
        assertThat(store.epoch()).as("the leader's epoch, the successor's, the leader's again")
                .isGreaterThanOrEqualTo(3);
        assertThat(broker.deliveredCount()).as("every record, the refused purge's again").isGreaterThanOrEqualTo(100);
        assertThat(d.isLeader()).isTrue();
        assertThat(d.health().lastFailure()).hasValueSatisfying(f -> assertThat(f.error())
                .contains("StoreFencedException"));
    }

    @Test
    void aBrokerOutageLongerThanMaxAttemptsParksNothingCountsNothingAndKeepsEveryKeysOrder() {
        InMemoryStore store = new InMemoryStore();
        java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
        AtomicInteger outageFailures = new AtomicInteger();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> {
            if (down.get()) {
                outageFailures.incrementAndGet();
                return BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_OUTAGE);
            }
            return BrokerFaults.Fault.ACK;
        }).build();
        writeFrom(store, 0, 100, 10);
        Dispatcher d = start(store, broker, fastConfig().maxAttempts(3).build(), newName());

        // every key's head fails many times over maxAttempts (3)
        Await.untilOrFail(() -> outageFailures.get() >= 100, WAIT, () -> "outage failures " + outageFailures);
        assertThat(d.health().outageSince()).as("an alertable outage").isPresent();
        assertThat(events.parked).as("nothing parked during an outage").isEmpty();
        assertThat(store.rows()).as("no attempt counted").allSatisfy(r -> assertThat(r.attempts()).isZero());

        down.set(false);
        Await.untilOrFail(() -> broker.deliveredCount() == 100 && store.size() == 0, WAIT, store::toString);
        assertThat(events.parked).isEmpty();
        assertThat(valuesByKey(broker.delivered()).values()).allSatisfy(values ->
                assertThat(values).isSorted().hasSize(10));
        Await.untilOrFail(() -> d.health().outageSince().isEmpty(), WAIT, () -> d.health().toString());
    }

    @Test
    void aPurgeRefusedForGoodHoldsTheDeliveredKeysIsReportedOnceAndIsReleasedWhenTheStoreAcceptsItAgain() {
        InMemoryStore store = new InMemoryStore();
        java.util.concurrent.atomic.AtomicBoolean refusing = new java.util.concurrent.atomic.AtomicBoolean(true);
        AtomicInteger purges = new AtomicInteger();
        store.setFaults(op -> {
            if (op != StoreFaults.Operation.PURGE) {
                return StoreFaults.Fault.NONE;
            }
            purges.incrementAndGet();
            return refusing.get() ? StoreFaults.Fault.refuse() : StoreFaults.Fault.NONE;
        });
        InMemoryBroker broker = new InMemoryBroker();
        writeFrom(store, 0, 100, 10);
        Dispatcher d = start(store, broker, fastConfig().build(), newName());

        // Every key's head is delivered, its purge refused: held, so no key's second record goes out.
        Await.untilOrFail(() -> d.health().heldRecords() == 10 && purges.get() > 100, WAIT,
                () -> d.health() + ", purges " + purges);
        assertThat(broker.deliveredCount()).as("one record per key, then the keys wait").isEqualTo(10);
        assertThat(store.size()).as("nothing purged").isEqualTo(100);
        assertThat(events.failures).as("reported once, not every retry").singleElement()
                .satisfies(f -> assertThat(f).startsWith("purge: ").contains("not retriable"));
        assertThat(d.health().lastFailure()).hasValueSatisfying(f -> assertThat(f.operation()).isEqualTo("purge"));

        refusing.set(false);
        Await.untilOrFail(() -> store.size() == 0 && d.health().heldRecords() == 0, WAIT, store::toString);
        assertThat(broker.deliveredCount()).as("no duplicates").isEqualTo(100);
        assertThat(valuesByKey(broker.delivered()).values()).allSatisfy(values ->
                assertThat(values).isSorted().hasSize(10));
        assertThat(events.failures).hasSize(1);
    }

    @Test
    void harvestsEverythingInOrderWithBatchedPurges() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder()
                .faults(BrokerFaults.random(1).delayAcks(Duration.ofMillis(2)).build()).build();
        write(store, 2_000, 20);
        String name = newName();
        Dispatcher d = start(store, broker, fastConfig().build(), name);

        Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "outbox not drained: " + store);
        assertThat(broker.deliveredCount()).isEqualTo(2_000);
        valuesByKey(broker.delivered()).forEach((k, values) -> assertThat(values).as("key " + k).isSorted());
        assertThat(d.isLeader()).isTrue();
        assertThat(d.leaderId()).isPresent();
        assertThat(events.acquired).hasSize(1);
        Await.untilOrFail(() -> events.meterAcknowledged.get() == 2_000, WAIT,
                () -> "meter reads count " + events.meterAcknowledged);

        d.close();
        assertThat(d.state()).isEqualTo(Dispatcher.State.CLOSED);
        assertThat(Threads.alive(name + "-")).isEmpty();
    }

    @Test
    void coalescesAcknowledgementsIntoFewPurges() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> Fault.of(Outcome.HANG)).build();
        // The first purge waits until every acknowledgement has arrived, so the ones behind it queue up: the
        // next purge must take them all at once, however the threads are scheduled.
        java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
        store.setFaults(op -> {
            if (op == Operation.PURGE && first.getAndSet(false)) {
                Await.untilOrFail(() -> broker.pendingCount() == 0, WAIT, broker::toString);
            }
            return StoreFaults.Fault.NONE;
        });
        write(store, 200, 200);
        start(store, broker, fastConfig().build(), newName());
        Await.untilOrFail(() -> broker.hungCount() == 200, WAIT, broker::toString);

        broker.releaseHung();
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(store.purgedRows()).isEqualTo(200);
        assertThat(store.calls(Operation.PURGE)).as("one purge call per batch of acknowledgements").isLessThanOrEqualTo(3L);
    }

    @Test
    void keepsKeyValueTombstoneAndHeadersInOrder() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        OutboxMessage withHeaders = OutboxMessage.of("orders", "a", new byte[] {1, 2},
                List.of(Header.of("x", "1"), Header.of("y", (byte[]) null), Header.of("x", "2")));
        OutboxMessage tombstone = OutboxMessage.tombstone("orders", "a");
        store.publisher().publish(null, List.of(withHeaders, tombstone));
        start(store, broker, fastConfig().build(), newName());

        Await.untilOrFail(() -> broker.deliveredCount() == 2, WAIT, broker::toString);
        assertThat(broker.delivered()).extracting(OutboxRecord::message).containsExactly(withHeaders, tombstone);
    }

    @Test
    void neverHasTwoRecordsOfAKeyInFlightNorMoreThanTheLimit() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker inner = InMemoryBroker.builder()
                .faults(BrokerFaults.random(7).delayAcks(Duration.ofMillis(5)).build()).build();
        brokers.add(inner);
        ObservingBroker broker = new ObservingBroker(inner);
        write(store, 3_000, 100);
        DispatcherConfig config = fastConfig().markBatchSize(20).maxInFlightRecords(40).build();
        Dispatcher d = Dispatcher.builder(store, broker).config(config).name(newName()).build();
        dispatchers.add(d);
        d.start();

        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(broker.maxPerKey()).isEqualTo(1);
        assertThat(broker.maxInFlight()).isLessThanOrEqualTo(40).isGreaterThan(1);
        valuesByKey(inner.delivered()).forEach((k, values) -> assertThat(values).as("key " + k).isSorted());
    }

    @Test
    void permanentFailureParksAtOnceAndOtherKeysKeepFlowing() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder()
                .faults(r -> r.key().equals("poison") ? Fault.of(Outcome.FAIL_PERMANENT) : Fault.ACK).build();
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "poison", "0")));
        write(store, 500, 10);
        start(store, broker, fastConfig().build(), newName());

        Await.untilOrFail(() -> store.size() == 0 && events.parked.size() == 1, WAIT,
                () -> store + "; parked events: " + events.parked);
        assertThat(broker.deliveredCount()).isEqualTo(500);
        assertThat(store.parkedRows()).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("poison");
            assertThat(p.reason()).contains("permanent");
            assertThat(p.attempts()).as("the one failed delivery, as the listener is told").isEqualTo(1);
        });
        assertThat(events.parked).singleElement().satisfies(p -> {
            assertThat(p.key()).isEqualTo("poison");
            assertThat(p.attempts()).isEqualTo(1);
        });
    }

    @Test
    void retriableFailuresParkAfterMaxAttemptsWithoutStallingOthers() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder()
                .faults(r -> r.key().equals("cursed") ? Fault.of(Outcome.FAIL_RETRIABLE) : Fault.ACK).build();
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "cursed", "0"),
                OutboxMessage.of("t", "cursed", "1")));
        write(store, 300, 10);
        start(store, broker, fastConfig().maxAttempts(3).build(), newName());

        Await.untilOrFail(() -> store.size() == 0 && events.parked.size() == 2, WAIT,
                () -> store + "; parked events: " + events.parked);
        assertThat(broker.deliveredCount()).isEqualTo(300);
        assertThat(store.parkedRows()).hasSize(2).allSatisfy(p -> {
            assertThat(p.key()).isEqualTo("cursed");
            assertThat(p.attempts()).as("every failed delivery, the last one included, as the listener says")
                    .isEqualTo(3);
            assertThat(p.reason()).contains("failed 3 times");
        });
        assertThat(events.parked).extracting(ParkedRecord::attempts).containsExactly(3, 3);
        assertThat(events.refreshed).as("a failed delivery holds its key only: no global rewind").isEmpty();
    }

    @Test
    void malformedRowsAreParkedWithTheirReason() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        write(store, 10, 2);
        long bad = store.insertMalformed("t", "k0", "header arrays differ in length: 2 names, 1 value");
        write(store, 10, 2);
        start(store, broker, fastConfig().build(), newName());

        Await.untilOrFail(() -> store.size() == 0 && events.parked.size() == 1, WAIT,
                () -> store + "; parked events: " + events.parked);
        assertThat(broker.deliveredCount()).isEqualTo(20);
        assertThat(store.parkedRows()).singleElement().satisfies(p -> {
            assertThat(p.id()).isEqualTo(bad);
            assertThat(p.reason()).contains("header arrays differ");
        });
        assertThat(events.parked).extracting(ParkedRecord::id).containsExactly(bad);
    }

    @Test
    void closeWaitsForInFlightAcknowledgements() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder()
                .faults(r -> Fault.of(Outcome.ACK, Duration.ofMillis(300))).build();
        write(store, 50, 50);
        String name = newName();
        Dispatcher d = start(store, broker, fastConfig().build(), name);
        Await.untilOrFail(() -> d.inFlightRecords() == 50, WAIT, () -> "in flight: " + d.inFlightRecords());

        d.close();
        assertThat(d.inFlightRecords()).isZero();
        assertThat(events.revoked).as("leadership given up on close").hasValue(1);
        assertThat(events.meterAcknowledged).as("the last meter read covers the drain").hasValue(50);
        assertThat(broker.deliveredCount()).isEqualTo(50);
        assertThat(store.size()).as("acknowledged rows were purged before close returned").isZero();
        assertThat(Threads.alive(name + "-")).isEmpty();
    }

    @Test
    void closeIsBoundedWhenTheBrokerHangsAndLosesNothing() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> Fault.of(Outcome.HANG)).build();
        write(store, 20, 20);
        String name = newName();
        Dispatcher d = start(store, broker, fastConfig().drainTimeout(Duration.ofMillis(500)).build(), name);
        Await.untilOrFail(() -> broker.hungCount() == 20, WAIT, broker::toString);

        long t0 = System.nanoTime();
        d.close();
        long tookMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(tookMs).as("close took %d ms", tookMs).isLessThan(5_000);
        assertThat(store.size()).as("unacknowledged rows stay for the next leader").isEqualTo(20);
        assertThat(Threads.alive(name + "-")).isEmpty();
    }

    @Test
    void stuckSendsAreReported() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> Fault.of(Outcome.HANG)).build();
        write(store, 3, 3);
        start(store, broker, fastConfig().queueTimeout(Duration.ofMillis(100)).build(), newName());

        Await.untilOrFail(() -> events.failures.stream().filter(f -> f.startsWith("send")).count() == 3, WAIT,
                () -> "failures: " + events.failures);
        broker.releaseHung();
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
    }

    @ParameterizedTest
    @EnumSource(DispatcherConfig.Harvest.class)
    void aFailingStoreIsRetriedWithExponentialBackoff(DispatcherConfig.Harvest harvest) {
        InMemoryStore store = new InMemoryStore();
        Operation failing = harvest == DispatcherConfig.Harvest.CURSOR ? Operation.READ : Operation.MARK;
        store.setFaults(op -> op == failing ? StoreFaults.Fault.failBefore() : StoreFaults.Fault.NONE);
        InMemoryBroker broker = new InMemoryBroker();
        write(store, 5, 5);
        DispatcherConfig config = fastConfig().ioErrorBackoff(Duration.ofMillis(20))
                .maxIoErrorBackoff(Duration.ofMillis(160)).harvest(harvest).build();
        start(store, broker, config, newName());

        Await.untilOrFail(() -> events.failureTimes.size() >= 7, WAIT, () -> "failures " + events.failures);
        List<Long> t = new ArrayList<>(events.failureTimes);
        long[] expectedMs = {20, 40, 80, 160, 160};
        for (int i = 0; i < expectedMs.length; i++) {
            long gapMs = (t.get(i + 1) - t.get(i)) / 1_000_000;
            assertThat(gapMs).as("gap %d after failure %d", gapMs, i).isGreaterThanOrEqualTo(expectedMs[i] - 2);
        }
        store.setFaults(op -> StoreFaults.Fault.NONE);
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(broker.deliveredCount()).isEqualTo(5);
    }

    @Test
    void aFencedLeaderStopsSendingAtOnceAndResumesWithANewId() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        Dispatcher d = Dispatcher.builder(store, broker).config(fastConfig().build()).listener(events)
                .leaderTransport(group.newMember()).name(newName()).build();
        dispatchers.add(d);
        d.start();
        Await.untilOrFail(d::isLeader, WAIT, () -> "never led");
        UUID first = d.leaderId().orElseThrow();

        group.stallHeartbeats(true);
        Await.untilOrFail(() -> events.fenced.get() == 1, WAIT, () -> "never fenced");
        assertThat(d.isLeader()).isFalse();
        long sendsAtFence = broker.sendCount();
        write(store, 100, 10);
        // While fenced, nothing is sent: give the mark loop many poll intervals to misbehave.
        assertThat(Await.until(() -> broker.sendCount() > sendsAtFence, Duration.ofMillis(300))).isFalse();

        group.stallHeartbeats(false);
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(d.leaderId()).get().isNotEqualTo(first);
        assertThat(events.acquired).hasSize(2);
    }

    @Test
    void aStalledLeaderThreadCannotPublishPastItsLease() throws Exception {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch stalled = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean stall = new java.util.concurrent.atomic.AtomicBoolean();
        DispatcherListener stallingMeter = new DispatcherListener() {
            @Override
            public void meterRead(dev.outbox.MeterReading reading) {
                if (stall.get()) {
                    stalled.countDown();
                    try {
                        release.await(); // a user callback that blocks the leader thread
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        };
        Dispatcher d = Dispatcher.builder(store, broker).config(fastConfig().build()).listener(stallingMeter)
                .name(newName()).build();
        dispatchers.add(d);
        d.start();
        write(store, 10, 10);
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);

        stall.set(true);
        assertThat(stalled.await(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        long t0 = System.nanoTime();
        // Within the lease (heartbeat timeout 300 ms) sending goes on; after it, nothing is sent.
        Await.untilOrFail(() -> System.nanoTime() - t0 > Duration.ofMillis(400).toNanos(), WAIT, () -> "clock");
        long sendsAtLapse = broker.sendCount();
        write(store, 50, 10);
        assertThat(Await.until(() -> broker.sendCount() > sendsAtLapse, Duration.ofMillis(300))).isFalse();

        stall.set(false);
        release.countDown();
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(broker.deliveredCount()).isEqualTo(60);
    }

    @Test
    void lifecycleErrorsAreClear() {
        InMemoryStore store = new InMemoryStore();
        Dispatcher d = start(store, new InMemoryBroker(), fastConfig().build(), newName());
        assertThatThrownBy(d::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("already");
        d.close();
        d.close();
        Dispatcher never = Dispatcher.builder(store, new InMemoryBroker()).build();
        never.close();
        assertThat(never.state()).isEqualTo(Dispatcher.State.CLOSED);
        assertThatThrownBy(() -> Dispatcher.builder(store, new InMemoryBroker()).name(" "))
                .hasMessageContaining("name must not be blank");
    }

    @Test
    void awaitReturnsOnceClosed() throws Exception {
        Dispatcher d = start(new InMemoryStore(), new InMemoryBroker(), fastConfig().build(), newName());
        Thread closer = new Thread(d::close);
        closer.start();
        d.await();
        assertThat(d.state()).isEqualTo(Dispatcher.State.CLOSED);
        closer.join();
    }

    /** Collects listener events. */
    static final class Events implements DispatcherListener {
        final List<UUID> acquired = new CopyOnWriteArrayList<>();
        final List<UUID> refreshed = new CopyOnWriteArrayList<>();
        final AtomicInteger fenced = new AtomicInteger();
        final AtomicInteger revoked = new AtomicInteger();
        final List<ParkedRecord> parked = new CopyOnWriteArrayList<>();
        final List<String> failures = new CopyOnWriteArrayList<>();
        final List<Long> failureTimes = Collections.synchronizedList(new ArrayList<>());
        /** When any dispatcher's leadership changed (acquired, refreshed, fenced, revoked), by nanoTime. */
        final List<Long> leadershipTimes = Collections.synchronizedList(new ArrayList<>());
        final AtomicLong meterAcknowledged = new AtomicLong();

        @Override
        public void leaderAcquired(UUID leaderId) {
            leadershipTimes.add(System.nanoTime());
            acquired.add(leaderId);
        }

        @Override
        public void leaderRefreshed(UUID leaderId) {
            leadershipTimes.add(System.nanoTime());
            refreshed.add(leaderId);
        }

        @Override
        public void leaderFenced() {
            leadershipTimes.add(System.nanoTime());
            fenced.incrementAndGet();
        }

        @Override
        public void leaderRevoked() {
            leadershipTimes.add(System.nanoTime());
            revoked.incrementAndGet();
        }

        @Override
        public void recordParked(ParkedRecord record) {
            parked.add(record);
        }

        @Override
        public void failure(String operation, Throwable error) {
            failures.add(operation + ": " + error);
            failureTimes.add(System.nanoTime());
        }

        @Override
        public void meterRead(dev.outbox.MeterReading reading) {
            meterAcknowledged.addAndGet(reading.acknowledged());
        }
    }
}
