package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.DispatcherHealth.Status;
import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.MeterReading;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxSample;
import dev.outbox.ParkedRecord;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Operation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** The dispatcher's observation surface: observer hooks, {@link Dispatcher#health()}, the leader's samples. */
class DispatcherObservationTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final List<Dispatcher> dispatchers = new ArrayList<>();

    private static DispatcherConfig config() {
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
                .build();
    }

    private Dispatcher.Builder builder(InMemoryStore store, InMemoryBroker broker) {
        return Dispatcher.builder(store, broker).config(config()).name("obs" + NAMES.incrementAndGet());
    }

    private Dispatcher started(Dispatcher.Builder builder) {
        Dispatcher d = builder.build();
        dispatchers.add(d);
        d.start();
        return d;
    }

    @AfterEach
    void closeAll() {
        dispatchers.forEach(Dispatcher::close);
    }

    private static void write(InMemoryStore store, int count, int keys) {
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(OutboxMessage.of("t" + (i % 2), "k" + (i % keys), String.valueOf(i)));
        }
        store.publisher().publish(null, batch);
    }

    @Test
    void observerMeasuresTheHarvestAndTheLeaderSamplesBacklogParkedAndLag() {
        Instant anHourAgo = Instant.now().minus(Duration.ofHours(1));
        InMemoryStore store = new InMemoryStore(Clock.fixed(anHourAgo, ZoneOffset.UTC));
        InMemoryBroker broker = new InMemoryBroker();
        broker.pauseAcks();
        write(store, 100, 7);
        store.insertMalformed("t0", "bad-1", "unreadable");
        store.insertMalformed(null, null, "unreadable");
        Recording rec = new Recording();
        Dispatcher d = started(builder(store, broker).observer(rec));

        Await.untilOrFail(() -> d.health().lastSample().filter(s -> s.parked() == 2 && s.backlog() == 100)
                .isPresent(), WAIT, () -> "sample with 100 waiting and 2 parked: " + d.health());
        DispatcherHealth busy = d.health();
        assertThat(busy.status()).isEqualTo(Status.LEADER);
        assertThat(busy.isUp()).isTrue();
        assertThat(busy.leaderId()).isEqualTo(d.leaderId()).isPresent();
        assertThat(busy.lag()).hasValueSatisfying(lag -> assertThat(lag).isGreaterThan(Duration.ofMinutes(59)));
        assertThat(busy.lastSample().orElseThrow().oldest()).contains(anHourAgo);
        assertThat(busy.lastMark()).isPresent();
        assertThat(busy.lastPurge()).as("nothing acknowledged yet").isEmpty();
        assertThat(busy.inFlightRecords()).isPositive();

        broker.resumeAcks();
        Await.untilOrFail(() -> d.health().lastSample().filter(s -> s.backlog() == 0 && s.parked() == 2
                && s.lag().isZero() && s.oldest().isEmpty()).isPresent(), WAIT,
                () -> "sample of a drained outbox: " + d.health());
        assertThat(d.health().lastPurge()).isPresent();
        assertThat(d.health().callbackErrors()).isZero();
        d.close();

        assertThat(rec.markedRows.get()).as("rows marked, readable or not").isEqualTo(102);
        assertThat(rec.marks.get()).isGreaterThan(0);
        assertThat(rec.sent).hasSize(100);
        assertThat(rec.acknowledged).hasSize(100);
        assertThat(rec.purgedRows.get()).isEqualTo(100);
        assertThat(rec.commitToAck).allSatisfy(t -> assertThat(t).isGreaterThan(Duration.ofMinutes(59)));
        assertThat(rec.sendToAck).allSatisfy(t -> assertThat(t).isGreaterThanOrEqualTo(Duration.ZERO)
                .isLessThan(Duration.ofMinutes(1)));
        assertThat(rec.failed).isEmpty();
        assertThat(rec.parked).extracting(ParkedRecord::key).containsExactlyInAnyOrder("bad-1", null);
        assertThat(rec.samples).isNotEmpty();
        assertThat(d.health().status()).isEqualTo(Status.CLOSED);
        assertThat(d.health().isUp()).isFalse();
        assertThat(d.health().lastSample()).as("only a leader reports a sample").isEmpty();
    }

    @Test
    void failedDeliveriesAreObservedAndReportedAsTheLastFailure() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> r.key().equals("poison")
                ? BrokerFaults.Fault.of(BrokerFaults.Outcome.FAIL_PERMANENT) : BrokerFaults.Fault.ACK).build();
        store.publisher().publish(null, List.of(OutboxMessage.of("t", "a", "1"), OutboxMessage.of("t", "poison",
                "2"), OutboxMessage.of("t", "b", "3")));
        Recording rec = new Recording();
        Dispatcher d = started(builder(store, broker).observer(rec));

        // The observer hears of an acknowledgement after its row was purged (DispatcherObserver#acknowledged).
        Await.untilOrFail(() -> store.size() == 0 && rec.parked.size() == 1 && rec.acknowledged.size() >= 2, WAIT,
                store::toString);
        assertThat(rec.failed).extracting(OutboxRecord::key).containsExactly("poison");
        assertThat(rec.acknowledged).extracting(OutboxRecord::key).containsExactlyInAnyOrder("a", "b");
        DispatcherHealth.Failure failure = d.health().lastFailure().orElseThrow();
        assertThat(failure.operation()).isEqualTo("send");
        assertThat(failure.error()).contains("DeliveryException");
        assertThat(failure.at()).isNotNull();
    }

    @Test
    void throwingListenerAndObserverLeaveTheHarvestUntouchedAndAreCountedAndLoggedOncePerKind() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        write(store, 500, 13);
        store.insertMalformed("t0", "bad", "unreadable");
        Recording after = new Recording();
        PrintStream stderr = System.err;
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        Dispatcher d;
        try {
            System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
            d = started(builder(store, broker).listener(new ThrowingListener()).observer(new ThrowingObserver())
                    .observer(after));
            Await.untilOrFail(() -> store.size() == 0 && d.health().lastSample().filter(s -> s.backlog() == 0)
                    .isPresent(), WAIT, store::toString);
            d.close();
        } finally {
            System.setErr(stderr);
        }

        assertThat(broker.deliveredCount()).isEqualTo(500);
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (OutboxRecord r : broker.delivered()) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(new String(r.message()
                    .value(), StandardCharsets.UTF_8)));
        }
        byKey.forEach((k, values) -> assertThat(values).as("key " + k).isSorted());
        assertThat(after.acknowledged).as("observers after the throwing one still hear everything").hasSize(500);
        assertThat(after.parked).hasSize(1);
        assertThat(d.health().callbackErrors()).as("every throw counted").isGreaterThan(1_000);

        Matcher m = Pattern.compile("obs\\d+: (\\S+) callback of \\S+ threw; ignored")
                .matcher(log.toString(StandardCharsets.UTF_8));
        List<String> logged = new ArrayList<>();
        while (m.find()) {
            logged.add(m.group(1));
        }
        assertThat(logged).as("logged once per kind").doesNotHaveDuplicates()
                .contains("listener.leaderAcquired", "listener.recordParked", "observer.marked", "observer.sent",
                        "observer.acknowledged", "observer.purged", "observer.parked", "observer.sampled");
    }

    @Test
    void healthFollowsLeadershipStandbyAndFencing() {
        InMemoryStore store = new InMemoryStore();
        Dispatcher notStarted = builder(store, new InMemoryBroker()).build();
        assertThat(notStarted.health().status()).isEqualTo(Status.STARTING);
        notStarted.close();

        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        Recording aRec = new Recording();
        Recording bRec = new Recording();
        Dispatcher a = started(builder(store, new InMemoryBroker()).leaderTransport(group.newMember())
                .observer(aRec));
        Dispatcher b = started(builder(store, new InMemoryBroker()).leaderTransport(group.newMember())
                .observer(bRec));
        group.assignNext();
        Await.untilOrFail(() -> a.health().status() == Status.LEADER && b.health().status() == Status.STANDBY
                || b.health().status() == Status.LEADER && a.health().status() == Status.STANDBY, WAIT,
                () -> a.health() + " / " + b.health());
        boolean aLeads = a.health().status() == Status.LEADER;
        Dispatcher leader = aLeads ? a : b;
        Dispatcher standby = aLeads ? b : a;
        Recording leaderRec = aLeads ? aRec : bRec;
        Recording standbyRec = aLeads ? bRec : aRec;
        Await.untilOrFail(() -> leaderRec.samples.size() >= 3, WAIT, () -> "samples " + leaderRec.samples);
        assertThat(standbyRec.samples).as("a standby never samples").isEmpty();
        assertThat(standby.health().leaderId()).isEmpty();
        assertThat(standby.health().lag()).isEmpty();

        group.stallHeartbeats(true);
        Await.untilOrFail(() -> leader.health().status() == Status.FENCED, WAIT, () -> leader.health().toString());
        assertThat(leader.health().leaderId()).isEmpty();
        assertThat(leader.health().lastSample()).isEmpty();
        group.stallHeartbeats(false);
        Await.untilOrFail(() -> leader.health().status() == Status.LEADER, WAIT, () -> leader.health().toString());
        Await.untilOrFail(() -> leaderRec.statuses.size() >= 3, WAIT, () -> "statuses " + leaderRec.statuses);
        assertThat(leaderRec.statuses).as("reported status changes").containsSubsequence(Status.LEADER,
                Status.FENCED, Status.LEADER).doesNotContain(Status.CLOSED);
        standby.close();
        assertThat(standbyRec.statuses).first().isEqualTo(Status.STANDBY);
        assertThat(standbyRec.statuses).last().isEqualTo(Status.CLOSED);
    }

    @ParameterizedTest
    @EnumSource(DispatcherConfig.Harvest.class)
    void aFailingSampleOrReadIsReportedAndHarvestingGoesOn(DispatcherConfig.Harvest harvest) {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        AtomicInteger readFailures = new AtomicInteger(1);
        boolean cursor = harvest == DispatcherConfig.Harvest.CURSOR;
        Operation reading = cursor ? Operation.READ : Operation.MARK;
        String read = cursor ? "read" : "mark";
        store.setFaults(op -> op == Operation.OLDEST ? Fault.failBefore()
                : op == reading && readFailures.getAndDecrement() > 0 ? Fault.failBefore() : Fault.NONE);
        List<String> failures = new CopyOnWriteArrayList<>();
        Dispatcher d = started(builder(store, broker).config(config().toBuilder().harvest(harvest).build())
                .listener(new DispatcherListener() {
            @Override
            public void failure(String operation, Throwable error) {
                failures.add(operation);
            }
        }));
        Await.untilOrFail(() -> failures.contains(read) && failures.contains("sample"), WAIT, failures::toString);
        assertThat(d.health().lastFailure()).hasValueSatisfying(f -> assertThat(f.operation()).isIn(read,
                "sample"));
        write(store, 50, 5);
        Await.untilOrFail(() -> store.size() == 0, WAIT, store::toString);
        assertThat(broker.deliveredCount()).isEqualTo(50);
        assertThat(d.health().lastSample()).as("no sample while its query fails").isEmpty();
        store.setFaults(StoreFaults.none());
        Await.untilOrFail(() -> d.health().lag().isPresent(), WAIT, () -> d.health().toString());
    }

    @Test
    void observersCanBeAddedAndRemovedWhileRunning() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        Dispatcher d = started(builder(store, broker));
        Recording rec = new Recording();
        d.addObserver(rec);
        d.addObserver(rec); // once only
        write(store, 20, 3);
        Await.untilOrFail(() -> rec.acknowledged.size() == 20, WAIT, () -> "acknowledged " + rec.acknowledged);
        assertThat(rec.sent).hasSize(20);
        d.removeObserver(rec);
        write(store, 20, 3);
        Await.untilOrFail(() -> broker.deliveredCount() == 40 && store.size() == 0, WAIT, store::toString);
        assertThat(rec.acknowledged).hasSize(20);
    }

    /** Records every observer event. */
    static final class Recording implements DispatcherObserver {
        final AtomicLong marks = new AtomicLong();
        final AtomicLong markedRows = new AtomicLong();
        final AtomicLong purgedRows = new AtomicLong();
        final List<OutboxRecord> sent = new CopyOnWriteArrayList<>();
        final List<OutboxRecord> acknowledged = new CopyOnWriteArrayList<>();
        final List<Duration> sendToAck = new CopyOnWriteArrayList<>();
        final List<Duration> commitToAck = new CopyOnWriteArrayList<>();
        final List<OutboxRecord> failed = new CopyOnWriteArrayList<>();
        final List<ParkedRecord> parked = new CopyOnWriteArrayList<>();
        final List<OutboxSample> samples = new CopyOnWriteArrayList<>();
        final List<Status> statuses = new CopyOnWriteArrayList<>();

        @Override
        public void marked(int rows, Duration duration) {
            assertThat(duration).isGreaterThanOrEqualTo(Duration.ZERO);
            marks.incrementAndGet();
            markedRows.addAndGet(rows);
        }

        @Override
        public void purged(int rows, Duration duration) {
            assertThat(duration).isGreaterThanOrEqualTo(Duration.ZERO);
            purgedRows.addAndGet(rows);
        }

        @Override
        public void sent(OutboxRecord record) {
            sent.add(record);
        }

        @Override
        public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
            acknowledged.add(record);
            this.sendToAck.add(sendToAck);
            this.commitToAck.add(commitToAck);
        }

        @Override
        public void failed(OutboxRecord record, Throwable error) {
            failed.add(record);
        }

        @Override
        public void parked(ParkedRecord record) {
            parked.add(record);
        }

        @Override
        public void sampled(OutboxSample sample) {
            samples.add(sample);
        }

        @Override
        public void statusChanged(Status status) {
            statuses.add(status);
        }
    }

    private static final class ThrowingObserver implements DispatcherObserver {
        @Override
        public void marked(int rows, Duration duration) {
            throw new IllegalStateException("marked");
        }

        @Override
        public void purged(int rows, Duration duration) {
            throw new IllegalStateException("purged");
        }

        @Override
        public void sent(OutboxRecord record) {
            throw new IllegalStateException("sent");
        }

        @Override
        public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
            throw new IllegalStateException("acknowledged");
        }

        @Override
        public void parked(ParkedRecord record) {
            throw new AssertionError("parked");
        }

        @Override
        public void sampled(OutboxSample sample) {
            throw new IllegalStateException("sampled");
        }
    }

    private static final class ThrowingListener implements DispatcherListener {
        @Override
        public void leaderAcquired(UUID leaderId) {
            throw new IllegalStateException("leaderAcquired");
        }

        @Override
        public void meterRead(MeterReading reading) {
            throw new IllegalStateException("meterRead");
        }

        @Override
        public void recordParked(ParkedRecord record) {
            throw new IllegalStateException("recordParked");
        }
    }
}
