package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.testkit.BrokerFaults.Fault;
import dev.outbox.testkit.BrokerFaults.Outcome;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InMemoryBrokerTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final AtomicLong IDS = new AtomicLong();
    private final List<InMemoryBroker> brokers = new ArrayList<>();

    @AfterEach
    void closeBrokers() {
        brokers.forEach(b -> b.close(Duration.ofSeconds(1)));
    }

    private InMemoryBroker broker(InMemoryBroker.Builder builder) {
        InMemoryBroker broker = builder.build();
        brokers.add(broker);
        return broker;
    }

    private static OutboxRecord record(String topic, String key) {
        return new OutboxRecord(IDS.incrementAndGet(), Instant.now(), OutboxMessage.of(topic, key, "v"), 0,
                UUID.randomUUID());
    }

    /** The failure of {@code stage}, null if it succeeded; waits at most {@link #WAIT}. */
    private static Throwable failure(CompletionStage<Void> stage) {
        try {
            stage.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError("stage did not complete: " + e, e);
        }
    }

    @Test
    void anAcknowledgedRecordIsLoggedBeforeItsStageCompletesOnTheBrokersThread() {
        InMemoryBroker broker = broker(InMemoryBroker.builder());
        OutboxRecord a = record("t1", "k");
        OutboxRecord b = record("t2", "k");
        AtomicReference<String> thread = new AtomicReference<>();
        AtomicReference<List<OutboxRecord>> logSeenByCallback = new AtomicReference<>();

        broker.pauseAcks();
        CompletionStage<Void> stage = broker.send(a).whenComplete((v, e) -> {
            thread.set(Thread.currentThread().getName());
            logSeenByCallback.set(broker.delivered());
        });
        Await.untilOrFail(() -> broker.heldCount() == 1, WAIT, () -> "the ack was not held: " + broker);
        broker.resumeAcks();
        assertThat(failure(stage)).isNull();
        assertThat(failure(broker.send(b))).isNull();

        assertThat(thread.get()).startsWith("outbox-inmemory-broker-");
        assertThat(logSeenByCallback.get()).containsExactly(a);
        assertThat(broker.delivered()).containsExactly(a, b);
        assertThat(broker.delivered("t2")).containsExactly(b);
        assertThat(broker.sendCount()).isEqualTo(2);
        // A send leaves the pending set just after its stage completed (so that flush covers the callbacks).
        Await.untilOrFail(() -> broker.pendingCount() == 0, WAIT, broker::toString);
    }

    @Test
    void eachOutcomeDoesWhatItSays() {
        InMemoryBroker broker = broker(InMemoryBroker.builder());
        broker.setFaults(r -> Fault.of(Outcome.valueOf(r.key())));

        Throwable retriable = failure(broker.send(record("t", "FAIL_RETRIABLE")));
        Throwable permanent = failure(broker.send(record("t", "FAIL_PERMANENT")));
        OutboxRecord lost = record("t", "LOST_ACK");
        Throwable lostAck = failure(broker.send(lost));
        assertThatThrownBy(() -> broker.send(record("t", "THROW"))).isInstanceOfSatisfying(DeliveryException.class,
                e -> assertThat(e.isPermanent()).isFalse());

        assertThat(retriable).isInstanceOfSatisfying(DeliveryException.class, e -> assertThat(e.isPermanent()).isFalse());
        assertThat(permanent).isInstanceOfSatisfying(DeliveryException.class, e -> assertThat(e.isPermanent()).isTrue());
        assertThat(lostAck).isInstanceOfSatisfying(DeliveryException.class, e -> assertThat(e.isPermanent()).isFalse())
                .hasMessageContaining("acknowledgement was lost");
        assertThat(broker.delivered()).as("only the record whose ack was lost was accepted").containsExactly(lost);
        assertThat(broker.failureCount()).isEqualTo(4);
    }

    @Test
    void aHungSendWaitsUntilReleased() {
        InMemoryBroker broker = broker(InMemoryBroker.builder().faults(r -> Fault.of(Outcome.HANG)));
        OutboxRecord hung = record("t", "k");
        CompletableFuture<Void> stage = broker.send(hung).toCompletableFuture();

        assertThat(broker.flush(Duration.ofMillis(50))).as("flush with a hung send").isFalse();
        assertThat(stage).isNotDone();
        assertThat(broker.hungCount()).isEqualTo(1);

        assertThat(broker.releaseHung()).isEqualTo(1);
        assertThat(failure(stage)).isNull();
        assertThat(broker.delivered()).containsExactly(hung);
        assertThat(broker.flush(Duration.ofMillis(50))).isTrue();
        assertThat(broker.releaseHung()).isZero();
    }

    @Test
    void aHungSendCanBeFailedAndIsThenNeverDelivered() {
        InMemoryBroker broker = broker(InMemoryBroker.builder().faults(r -> Fault.of(Outcome.HANG)));
        CompletionStage<Void> stage = broker.send(record("t", "k"));

        assertThat(broker.failHung()).isEqualTo(1);

        assertThat(failure(stage)).isInstanceOf(DeliveryException.class);
        assertThat(broker.releaseHung()).isZero();
        assertThat(broker.delivered()).isEmpty();
    }

    @Test
    void aDeliveryTimeoutFailsHungSends() {
        InMemoryBroker broker = broker(InMemoryBroker.builder().deliveryTimeout(Duration.ofMillis(30))
                .faults(r -> Fault.of(Outcome.HANG)));

        Throwable failure = failure(broker.send(record("t", "k")));

        assertThat(failure).isInstanceOf(DeliveryException.class).hasMessageContaining("delivery timeout");
        assertThat(broker.delivered()).isEmpty();
        assertThat(broker.hungCount()).isZero();
    }

    @Test
    void randomDelaysReorderAcknowledgementsAndTheLogFollowsTheAcknowledgements() {
        long seed = 7;
        InMemoryBroker broker = broker(InMemoryBroker.builder()
                .faults(BrokerFaults.random(seed).delayAcks(Duration.ofMillis(20)).build()));
        List<OutboxRecord> sent = new ArrayList<>();
        List<OutboxRecord> acknowledged = new CopyOnWriteArrayList<>();
        List<CompletionStage<Void>> stages = new ArrayList<>();
        broker.pauseAcks();
        for (int i = 0; i < 200; i++) {
            OutboxRecord r = record("t", "k" + i);
            sent.add(r);
            stages.add(broker.send(r).whenComplete((v, e) -> acknowledged.add(r)));
        }
        broker.resumeAcks();

        assertThat(broker.flush(WAIT)).isTrue();
        stages.forEach(s -> assertThat(failure(s)).isNull());

        assertThat(acknowledged).as("seed %d", seed).containsExactlyInAnyOrderElementsOf(sent)
                .isNotEqualTo(sent);
        assertThat(broker.delivered()).as("the log is in acknowledgement order").isEqualTo(acknowledged);
    }

    @Test
    void pausedAcksAreHeldUntilResumedAndThenAppliedInOrder() {
        InMemoryBroker broker = broker(InMemoryBroker.builder());
        broker.pauseAcks();
        List<CompletableFuture<Void>> stages = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            stages.add(broker.send(record("t", "k" + i)).toCompletableFuture());
        }

        Await.untilOrFail(() -> broker.heldCount() == 5, WAIT, () -> "acks not held: " + broker);
        assertThat(broker.flush(Duration.ofMillis(50))).as("flush while paused").isFalse();
        assertThat(broker.pendingCount()).isEqualTo(5);
        assertThat(broker.delivered()).isEmpty();

        assertThat(broker.resumeAcks()).isEqualTo(5);
        stages.forEach(s -> assertThat(failure(s)).isNull());
        assertThat(broker.delivered()).extracting(OutboxRecord::key).containsExactly("k0", "k1", "k2", "k3", "k4");
    }

    @Test
    void aRandomPlanIsDeterminedByItsSeed() {
        long seed = 1234;
        BrokerFaults a = BrokerFaults.random(seed).failRetriably(0.1).loseAcks(0.1).hang(0.05).throwOnSend(0.05)
                .delayAcks(Duration.ofMillis(5)).failPermanentlyWhen(r -> r.key().startsWith("poison")).build();
        BrokerFaults b = BrokerFaults.random(seed).failRetriably(0.1).loseAcks(0.1).hang(0.05).throwOnSend(0.05)
                .delayAcks(Duration.ofMillis(5)).failPermanentlyWhen(r -> r.key().startsWith("poison")).build();
        int[] counts = new int[Outcome.values().length];
        int n = 10_000;
        for (int i = 0; i < n; i++) {
            OutboxRecord r = record("t", i % 100 == 0 ? "poison-" + i : "k" + i);
            Fault fault = a.decide(r);
            assertThat(fault).as("decision %d, seed %d", i, seed).isEqualTo(b.decide(r));
            assertThat(fault.delay()).isLessThanOrEqualTo(Duration.ofMillis(5));
            if (r.key().startsWith("poison")) {
                assertThat(fault.outcome()).isEqualTo(Outcome.FAIL_PERMANENT);
            }
            counts[fault.outcome().ordinal()]++;
        }
        assertThat(counts[Outcome.FAIL_PERMANENT.ordinal()]).isEqualTo(n / 100);
        assertThat(counts[Outcome.FAIL_RETRIABLE.ordinal()]).as("seed %d", seed).isBetween(800, 1_200);
        assertThat(counts[Outcome.LOST_ACK.ordinal()]).as("seed %d", seed).isBetween(800, 1_200);
        assertThat(counts[Outcome.HANG.ordinal()]).as("seed %d", seed).isBetween(350, 650);
        assertThat(counts[Outcome.THROW.ordinal()]).as("seed %d", seed).isBetween(350, 650);
    }

    @Test
    void aRandomPlanRejectsImpossibleProbabilities() {
        assertThatThrownBy(() -> BrokerFaults.random(1).hang(-0.1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("hang").hasMessageContaining("-0.1");
        assertThatThrownBy(() -> BrokerFaults.random(1).failRetriably(0.5).loseAcks(0.3).hang(0.3).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("more than 1");
        assertThatThrownBy(() -> InMemoryBroker.builder().maxRecordSize(0)).hasMessageContaining("0");
        assertThatThrownBy(() -> InMemoryBroker.builder().deliveryTimeout(Duration.ZERO))
                .hasMessageContaining("PT0S");
    }

    @Test
    void aRecordLargerThanTheMaximumFailsPermanentlyAtOnce() {
        InMemoryBroker broker = broker(InMemoryBroker.builder().maxRecordSize(10));
        OutboxRecord big = new OutboxRecord(IDS.incrementAndGet(), Instant.now(),
                OutboxMessage.of("t", "k", new byte[10]), 0, null);

        CompletableFuture<Void> stage = broker.send(big).toCompletableFuture();

        assertThat(stage).isCompletedExceptionally();
        assertThat(failure(stage)).isInstanceOfSatisfying(DeliveryException.class,
                e -> assertThat(e.isPermanent()).isTrue()).hasMessageContaining("11 bytes");
    }

    @Test
    void closeFlushesThenFailsWhatIsLeftAndStopsItsThread() throws Exception {
        InMemoryBroker broker = broker(InMemoryBroker.builder());
        AtomicReference<Thread> brokerThread = new AtomicReference<>();
        broker.pauseAcks();
        CompletionStage<Void> first = broker.send(record("t", "first"))
                .whenComplete((v, e) -> brokerThread.set(Thread.currentThread()));
        broker.resumeAcks();
        assertThat(failure(first)).isNull();
        assertThat(brokerThread.get().getName()).startsWith("outbox-inmemory-broker-");
        broker.setFaults(r -> switch (r.key()) {
            case "hung" -> Fault.of(Outcome.HANG);
            case "slow" -> Fault.of(Outcome.ACK, Duration.ofSeconds(30));
            default -> Fault.of(Outcome.ACK, Duration.ofMillis(20));
        });
        CompletionStage<Void> delayed = broker.send(record("t", "delayed"));
        CompletionStage<Void> hung = broker.send(record("t", "hung"));
        CompletionStage<Void> slow = broker.send(record("t", "slow"));

        long start = System.nanoTime();
        broker.close(Duration.ofMillis(200));
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(took).isLessThan(Duration.ofSeconds(5));
        assertThat(failure(delayed)).as("acknowledged within the close timeout").isNull();
        assertThat(failure(hung)).isInstanceOf(DeliveryException.class).hasMessageContaining("closed");
        assertThat(failure(slow)).isInstanceOf(DeliveryException.class).hasMessageContaining("closed");
        assertThat(brokerThread.get().isAlive()).as("broker thread alive after close").isFalse();
        assertThat(broker.delivered()).extracting(OutboxRecord::key).containsExactly("first", "delayed");
        assertThat(broker.releaseHung()).isZero();
        assertThat(failure(broker.send(record("t", "after")))).isInstanceOf(DeliveryException.class)
                .hasMessageContaining("closed");
        assertThat(broker.delivered()).hasSize(2);
        assertThat(broker.isClosed()).isTrue();
    }

    @Test
    void closeIsIdempotentAcrossThreadsAndSafeFromACompletionCallback() throws Exception {
        InMemoryBroker broker = broker(InMemoryBroker.builder());
        CountDownLatch closedInCallback = new CountDownLatch(1);
        AtomicReference<String> callbackThread = new AtomicReference<>();
        broker.pauseAcks();
        broker.send(record("t", "k")).whenComplete((v, e) -> {
            callbackThread.set(Thread.currentThread().getName());
            broker.close(Duration.ofSeconds(1));
            closedInCallback.countDown();
        });
        broker.resumeAcks();

        assertThat(closedInCallback.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        assertThat(callbackThread.get()).startsWith("outbox-inmemory-broker-");
        Thread other = new Thread(() -> broker.close(Duration.ofSeconds(1)));
        other.start();
        broker.close(Duration.ofSeconds(1));
        other.join(WAIT.toMillis());

        assertThat(other.isAlive()).isFalse();
        assertThat(broker.isClosed()).isTrue();
        assertThat(broker.delivered()).hasSize(1);
    }

    @Test
    void failuresDoNotWrapTheDeliveryException() {
        InMemoryBroker broker = broker(InMemoryBroker.builder().faults(r -> Fault.of(Outcome.FAIL_PERMANENT)));

        CompletableFuture<Void> stage = broker.send(record("t", "k")).toCompletableFuture();

        assertThatThrownBy(stage::join).isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(DeliveryException.class);
    }
}
