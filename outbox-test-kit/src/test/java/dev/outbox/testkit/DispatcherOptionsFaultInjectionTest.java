package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedRecord;
import dev.outbox.spi.Store;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import dev.outbox.testkit.InMemoryDeliveryOptions.OnDuplicate;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The guarantees as the delivery options amend them ({@code docs/guarantees.md}), under the faults of
 * {@link DispatcherFaultInjectionTest}, over many seeds. Per seed: writers ({@link OptionsWriters}) write plain,
 * delayed (2–100 ms), idempotent (some keys written twice, by one writer or by two racing ones) and latest-only
 * messages through an {@link InMemoryDeliveryOptions} (skipping or refusing duplicates, as the seed chooses), and
 * plain and latest-only ones in transactions that commit late or roll back; three dispatchers share a leader group
 * whose leadership is handed over, lost and fenced; the store fails calls before and after applying them; the broker
 * fails sends, loses and reorders acknowledgements; poison records and a cursed key fail. Then it asserts:
 * <ul>
 *   <li>not before: no delayed message reached the broker before its time by the store's clock;</li>
 *   <li>idempotency: no two messages of one idempotency key reached the broker; a skipped or refused duplicate
 *       (and a rolled-back message) never did; of two racing writes of a key, exactly one is written;</li>
 *   <li>G2: per key, the values the broker accepted never go backwards — delayed messages and the plain ones held
 *       behind them included;</li>
 *   <li>G1: every committed message was published, or parked, or — only a latest-only one — superseded: the observer
 *       was told, with a newer record of its key that was published (or parked, or superseded in turn);</li>
 *   <li>G4, G6, the per-key barrier and the in-flight throttle as in {@link DispatcherFaultInjectionTest}.</li>
 * </ul>
 * Four planted bugs ({@link PlantedOptionsBug}) prove the checks can fail, each found by its own. Run more seeds with
 * {@code -Doutbox.fi.options.seeds=50}, or one seed with {@code -Doutbox.fi.options.seed=<seed>}.
 */
class DispatcherOptionsFaultInjectionTest {
    private static final Logger log = LoggerFactory.getLogger(DispatcherOptionsFaultInjectionTest.class);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int MAX_IN_FLIGHT = 48;

    /** Each seed runs with both harvests. */
    static Stream<Arguments> seeds() {
        String one = System.getProperty("outbox.fi.options.seed");
        Stream<Long> seeds;
        if (one != null && !one.isBlank()) {
            seeds = Stream.of(Long.parseLong(one.trim()));
        } else {
            int count = Integer.getInteger("outbox.fi.options.seeds", 2);
            long base = new Random().nextLong();
            seeds = LongStream.range(0, count).mapToObj(i -> base + i);
        }
        return seeds.flatMap(seed -> Stream.of(DispatcherConfig.Harvest.values()).map(h -> Arguments.of(h, seed)));
    }

    @ParameterizedTest(name = "{0} harvest, seed {1}")
    @MethodSource("seeds")
    void amendedGuaranteesHoldUnderFaults(DispatcherConfig.Harvest harvest, long seed) {
        try {
            run(harvest, seed, PlantedOptionsBug.NONE);
        } catch (AssertionError | Exception e) {
            throw new AssertionError("options fault injection failed for the " + harvest + " harvest, seed " + seed
                    + " (re-run with -Doutbox.fi.options.seed=" + seed + "): " + e.getMessage(), e);
        }
    }

    /** Each planted bug with a random seed; more with {@code -Doutbox.fi.options.plantedSeeds=20}. */
    static Stream<Arguments> plantedBugs() {
        int count = Integer.getInteger("outbox.fi.options.plantedSeeds", 1);
        long base = new Random().nextLong();
        return Stream.of(PlantedOptionsBug.values()).filter(b -> b != PlantedOptionsBug.NONE)
                .flatMap(b -> LongStream.range(0, count).mapToObj(i -> Arguments.of(b, base + i)));
    }

    @ParameterizedTest(name = "{0}, seed {1}")
    @MethodSource("plantedBugs")
    void aPlantedBugIsFound(PlantedOptionsBug bug, long seed) {
        assertThatThrownBy(() -> run(DispatcherConfig.Harvest.CURSOR, seed, bug))
                .as("the planted bug %s, seed %d (re-run with -Doutbox.fi.options.seed=%d)", bug, seed, seed)
                .isInstanceOf(AssertionError.class).hasMessageContaining(bug.caughtBy());
    }

    private void run(DispatcherConfig.Harvest harvest, long seed, PlantedOptionsBug bug) throws Exception {
        Random random = new Random(seed);
        Clock clock = Clock.systemUTC();
        InMemoryStore inner = new InMemoryStore(clock);
        inner.setFaults(StoreFaults.random(seed).failBefore(0.02).failAfter(0.02)
                .delay(0.05, Duration.ofMillis(2)).build());
        OnDuplicate onDuplicate = (seed & 1) == 0 ? OnDuplicate.SKIP : OnDuplicate.FAIL; // consecutive seeds: both
        InMemoryDeliveryOptions options = InMemoryDeliveryOptions.wrap(inner).clock(bug.storeClock(clock))
                .scheduling().idempotencyKeys(Duration.ofHours(1), onDuplicate).build();
        Store store = bug.wrap(options);

        Set<Long> lostAcks = ConcurrentHashMap.newKeySet();
        Map<String, Instant> firstSend = new ConcurrentHashMap<>(); // by message name, the store's clock
        BrokerFaults randomFaults = BrokerFaults.random(seed).failRetriably(0.02).loseAcks(0.01)
                .throwOnSend(0.005).delayAcks(Duration.ofMillis(3))
                .failPermanentlyWhen(r -> r.key().startsWith("poison")).build();
        BrokerFaults faults = r -> {
            firstSend.putIfAbsent(name(r), clock.instant());
            if (r.key().equals("cursed")) {
                return Fault.of(Outcome.FAIL_RETRIABLE);
            }
            Fault f = randomFaults.decide(r);
            if (f.outcome() == Outcome.LOST_ACK) {
                lostAcks.add(r.id());
            }
            return f;
        };
        InMemoryBroker shared = InMemoryBroker.builder().faults(faults).build();
        Map<Long, String> supersededIds = new ConcurrentHashMap<>(); // id -> name
        Map<String, Long> superseded = new ConcurrentHashMap<>(); // name -> the newer record's id
        DispatcherObserver observer = new DispatcherObserver() {
            @Override
            public void superseded(OutboxRecord record, long newerId) {
                supersededIds.put(record.id(), name(record));
                superseded.put(name(record), newerId);
            }
        };

        DispatcherConfig config = DispatcherConfig.builder()
                .markBatchSize(16)
                .maxInFlightRecords(MAX_IN_FLIGHT)
                .purgeBatchSize(32)
                .pollInterval(Duration.ofMillis(10))
                .markBackoff(Duration.ofMillis(1))
                .heartbeatTimeout(Duration.ofMillis(150))
                .ioErrorBackoff(Duration.ofMillis(2))
                .maxIoErrorBackoff(Duration.ofMillis(20))
                .maxAttempts(5)
                .drainTimeout(Duration.ofSeconds(10))
                .metricsInterval(Duration.ofMillis(200))
                .harvest(harvest)
                .rescanInterval(Duration.ofMillis(50 + random.nextInt(500)))
                .build();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        DispatcherTest.Events events = new DispatcherTest.Events();
        String prefix = "fio" + Long.toHexString(seed) + "-";
        List<Dispatcher> dispatchers = new ArrayList<>();
        List<ObservingBroker> observers = new ArrayList<>();
        OptionsWriters writers = new OptionsWriters(store.publisher(), inner, clock);
        List<Thread> threads = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                ObservingBroker o = new ObservingBroker(shared);
                observers.add(o);
                Dispatcher d = Dispatcher.builder(store, o).config(config).listener(events).observer(observer)
                        .leaderTransport(group.newMember()).name(prefix + i).build();
                dispatchers.add(d);
                d.start();
            }
            AtomicBoolean writersFailed = new AtomicBoolean();
            for (int w = 0; w < OptionsWriters.WRITERS; w++) {
                int writer = w;
                Random writerRandom = new Random(random.nextLong());
                threads.add(thread(prefix + "writer-" + w, writersFailed, () -> writers.write(writer, writerRandom)));
            }
            CyclicBarrier barrier = new CyclicBarrier(2);
            for (int r = 0; r < 2; r++) {
                int racer = r;
                threads.add(thread(prefix + "writer-racer-" + r, writersFailed, () -> writers.race(racer, barrier)));
            }
            try (InMemoryStore.Transaction tx = inner.begin()) {
                for (int i = 0; i < 3; i++) {
                    tx.write(OutboxMessage.of("t", "poison-" + i, "0"));
                }
                tx.write(OutboxMessage.of("t", "cursed", "0"));
                tx.commit();
            }
            FaultInjectionRuns.changeLeaders(random, group, dispatchers, shared, threads);
            for (Thread t : threads) {
                t.join();
            }
            assertThat(writersFailed).as("a writer failed").isFalse();
            Await.untilOrFail(() -> inner.size() == 0 && options.waitingCount() == 0, WAIT,
                    () -> "not drained: " + inner.size() + " rows, " + options.waitingCount() + " waiting, "
                            + inner.rows().subList(0, Math.min(5, inner.size())));
        } finally {
            for (Thread t : threads) {
                t.join(WAIT.toMillis());
            }
            dispatchers.forEach(Dispatcher::close);
            shared.close(Duration.ofSeconds(5));
        }
        assertThat(Threads.alive(prefix).stream().filter(n -> !n.contains("writer")).toList())
                .as("threads left after close").isEmpty();
        new OptionsGuaranteeChecks(writers, shared.delivered(), firstSend, superseded, supersededIds, inner).check();
        FaultInjectionRuns.Duplicates duplicates = checkG6AndG4(events, inner, shared.delivered(), lostAcks, observers,
                config);
        log.info("{} harvest, seed {}, {}: {} committed, {} delivered, {} superseded, {} delayed ({}), {} duplicates"
                        + " written ({} refused calls), {} parked, {} fences, {} records delivered again ({} with no"
                        + " lost acknowledgement); {} store faults injected", harvest, seed,
                onDuplicate, writers.committed.size(), shared.deliveredCount(), superseded.size(),
                writers.due.size(), OptionsGuaranteeChecks.lateness(writers.due, firstSend), options.duplicates(),
                writers.refusals.get(), inner.parkedRows().size(), events.fenced.get(), duplicates.all(),
                duplicates.other(),
                inner.injectedFailures(StoreFaults.Operation.MARK) + inner.injectedFailures(StoreFaults.Operation.READ)
                        + inner.injectedFailures(StoreFaults.Operation.PURGE)
                        + inner.injectedFailures(StoreFaults.Operation.RETRY_LATER));
    }

    /** G6 and G4 as {@link DispatcherFaultInjectionTest} checks them, and the barrier and throttle; the duplicates. */
    private static FaultInjectionRuns.Duplicates checkG6AndG4(DispatcherTest.Events events, InMemoryStore store,
            List<OutboxRecord> delivered, Set<Long> lostAcks, List<ObservingBroker> observers,
            DispatcherConfig config) {
        List<ParkedRecord> parked = store.parkedRows();
        Set<Long> parkedIds = new HashSet<>();
        parked.forEach(p -> parkedIds.add(p.id()));
        assertThat(parked).extracting(ParkedRecord::key).as("G6: poison and cursed records parked")
                .contains("poison-0", "poison-1", "poison-2", "cursed");
        assertThat(events.parked).extracting(ParkedRecord::id).containsExactlyInAnyOrderElementsOf(parkedIds);
        assertThat(events.parked).filteredOn(p -> !p.key().startsWith("poison") && !p.key().equals("cursed"))
                .allSatisfy(p -> assertThat(p.attempts()).isEqualTo(config.maxAttempts()));
        assertThat(delivered).extracting(OutboxRecord::key).as("G6: nothing of the parked keys delivered")
                .doesNotContain("poison-0", "poison-1", "poison-2", "cursed");
        // A retryLater whose answer an injected fault lost after it committed is tried again and counts that
        // failure twice: under store faults the parked row counts at least what the listener was told.
        assertThat(parked).as("G6: the parked rows count at least the attempts the listener was told")
                .allSatisfy(row -> assertThat(events.parked).filteredOn(p -> p.id() == row.id())
                        .singleElement()
                        .satisfies(p -> assertThat(row.attempts()).isGreaterThanOrEqualTo(p.attempts())));
        return FaultInjectionRuns.checkDuplicates(delivered, lostAcks, observers, events, config.maxInFlightRecords());
    }

    private static Thread thread(String name, AtomicBoolean failed, ThrowingRunnable body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Exception | AssertionError e) {
                log.error("{} failed", name, e);
                failed.set(true);
            }
        }, name);
        t.start();
        return t;
    }

    /** A record's message name, {@code <key>:<value>}. */
    static String name(OutboxRecord r) {
        return r.key() + ":" + new String(r.message().value(), StandardCharsets.UTF_8);
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }
}
