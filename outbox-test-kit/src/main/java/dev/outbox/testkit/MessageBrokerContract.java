package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract of the {@link MessageBroker} port, as a JUnit 5 suite that every broker runs against a real
 * server: delivery with key, value, headers and tombstones intact, concurrent sends, per-key order of
 * sequential sends, permanent failures, flush and close.
 *
 * <p>Extend it and implement the hooks:
 * <pre>{@code
 * class KafkaMessageBrokerContractTest extends MessageBrokerContract {
 *     protected MessageBroker createBroker() { return new KafkaMessageBroker(...); }
 *     protected String newTopic() { ... create a fresh topic ... }
 *     protected List<ReceivedMessage> readBack(String topic, int expected, Duration timeout) { ... consume ... }
 *     protected OutboxRecord permanentlyFailingRecord(String topic) { ... a record larger than allowed ... }
 * }
 * }</pre>
 *
 * <p>Each test gets a fresh broker from {@link #createBroker()} and closes it afterwards. Each test is bounded
 * by a timeout.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class MessageBrokerContract {
    /** How long a test waits for an acknowledgement or for messages to arrive. */
    protected static final Duration WAIT = Duration.ofSeconds(30);
    private static final AtomicLong IDS = new AtomicLong();

    /** The broker under test in the current test. */
    protected MessageBroker broker;

    /**
     * A fresh broker, for one test. Called before each test; the suite closes it afterwards.
     *
     * @return the broker under test, not {@code null}, connected to the server {@link #readBack} reads
     */
    protected abstract MessageBroker createBroker();

    /**
     * Creates (if the broker needs it) and returns a topic no other test uses.
     *
     * @return the topic's name, empty on return; a valid topic name for the broker
     */
    protected abstract String newTopic();

    /**
     * Reads what was delivered to {@code topic}, from its beginning, until {@code expected} messages have been
     * read or {@code timeout} has passed, and returns them. Order across keys need not be preserved; order
     * within a key must be as the broker stores it.
     *
     * @param topic    a topic from {@link #newTopic()}
     * @param expected how many messages the test expects; reading may stop once that many arrived (returning more
     *                 is allowed, so that a test sees duplicates)
     * @param timeout  how long to wait for them, at most; return what arrived by then rather than fail
     * @return the messages read, each with every header a consumer of the topic sees, in order (the suite's
     *         records carry no message id, so a broker adds none)
     */
    protected abstract List<ReceivedMessage> readBack(String topic, int expected, Duration timeout);

    /**
     * A record to {@code topic} that this broker can never accept, for example one larger than it allows.
     *
     * @param topic a topic from {@link #newTopic()}
     * @return a record whose send must complete with a permanent {@link dev.outbox.spi.DeliveryException} (see
     *         {@link #record} to build one)
     */
    protected abstract OutboxRecord permanentlyFailingRecord(String topic);

    @BeforeEach
    final void createFreshBroker() {
        broker = createBroker();
        assertThat(broker).as("createBroker()").isNotNull();
    }

    @AfterEach
    final void closeFreshBroker() {
        if (broker != null) {
            broker.close(Duration.ofSeconds(10));
        }
    }

    @Test
    void sentRecordArrivesWithKeyValueAndHeadersInOrder() {
        String topic = newTopic();
        OutboxRecord record = record(OutboxMessage.builder(topic, "key-1")
                .value("value-1")
                .header("trace", "abc")
                .header("empty", (byte[]) null)
                .header("trace", "def")
                .header("binary", new byte[]{0, -1, 127, -128})
                .build());

        Outcome outcome = await(broker.send(record));

        assertThat(outcome.failure()).as("send failure").isNull();
        List<ReceivedMessage> received = readBack(topic, 1, WAIT);
        assertThat(received).containsExactly(ReceivedMessage.of(record));
        assertThat(received.get(0).valueAsString()).isEqualTo("value-1");
        assertThat(received.get(0).headers().get(1).value()).isNull();
    }

    @Test
    void tombstoneArrivesWithANullValueAndAnEmptyValueStaysEmpty() {
        String topic = newTopic();
        OutboxRecord tombstone = record(OutboxMessage.tombstone(topic, "gone"));
        OutboxRecord empty = record(OutboxMessage.of(topic, "empty", new byte[0]));

        assertThat(await(broker.send(tombstone)).failure()).isNull();
        assertThat(await(broker.send(empty)).failure()).isNull();

        Map<String, ReceivedMessage> byKey = byKey(readBack(topic, 2, WAIT));
        assertThat(byKey).containsOnlyKeys("gone", "empty");
        assertThat(byKey.get("gone").value()).as("tombstone").isNull();
        assertThat(byKey.get("empty").value()).as("empty value").isNotNull().isEmpty();
    }

    @Test
    void aValueOf64KiBArrivesIntact() {
        String topic = newTopic();
        byte[] value = new byte[64 * 1024];
        for (int i = 0; i < value.length; i++) {
            value[i] = (byte) (i * 31);
        }
        OutboxRecord record = record(OutboxMessage.of(topic, "big", value));

        assertThat(await(broker.send(record)).failure()).isNull();

        assertThat(readBack(topic, 1, WAIT)).containsExactly(ReceivedMessage.of(record));
    }

    @Test
    void manyConcurrentSendsAllCompleteAndArrive() throws Exception {
        String topic = newTopic();
        int threads = 4;
        int perThread = 250;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<CompletionStage<Void>> stages = new ArrayList<>();
        List<OutboxRecord> sent = new ArrayList<>();
        try {
            List<Future<List<Map.Entry<OutboxRecord, CompletionStage<Void>>>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    List<Map.Entry<OutboxRecord, CompletionStage<Void>>> mine = new ArrayList<>();
                    for (int i = 0; i < perThread; i++) {
                        OutboxRecord r = record(OutboxMessage.of(topic, "t" + thread + "-k" + (i % 25),
                                "t" + thread + "-" + i));
                        mine.add(Map.entry(r, broker.send(r)));
                    }
                    return mine;
                }));
            }
            for (Future<List<Map.Entry<OutboxRecord, CompletionStage<Void>>>> f : futures) {
                for (Map.Entry<OutboxRecord, CompletionStage<Void>> e : f.get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    sent.add(e.getKey());
                    stages.add(e.getValue());
                }
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(10, TimeUnit.SECONDS);
        }

        List<Outcome> outcomes = awaitAll(stages);

        assertThat(outcomes).extracting(Outcome::failure).as("send failures").containsOnlyNulls();
        List<ReceivedMessage> received = readBack(topic, threads * perThread, WAIT);
        assertThat(received).containsExactlyInAnyOrderElementsOf(sent.stream().map(ReceivedMessage::of).toList());
    }

    @Test
    void sequentialSendsOfOneKeyArriveInOrder() {
        String topic = newTopic();
        int keys = 5;
        int perKey = 20;
        Map<String, List<String>> expected = new LinkedHashMap<>();
        for (int i = 0; i < perKey; i++) {
            // like the dispatcher: records of different keys in flight together, one record per key at a time
            List<CompletionStage<Void>> round = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                String value = "k" + k + "-" + i;
                round.add(broker.send(record(OutboxMessage.of(topic, "k" + k, value))));
                expected.computeIfAbsent("k" + k, x -> new ArrayList<>()).add(value);
            }
            assertThat(awaitAll(round)).extracting(Outcome::failure).as("round %d", i).containsOnlyNulls();
        }

        List<ReceivedMessage> received = readBack(topic, keys * perKey, WAIT);

        Map<String, List<String>> actual = new LinkedHashMap<>();
        for (ReceivedMessage m : received) {
            actual.computeIfAbsent(m.key(), x -> new ArrayList<>()).add(m.valueAsString());
        }
        assertThat(actual).containsExactlyInAnyOrderEntriesOf(expected);
    }

    /**
     * A topic the broker cannot send to at once, because it has to find something out first: for Kafka, a topic
     * that does not exist on a cluster that does not create topics (the producer waits for its metadata). By
     * default a fresh name that no test created, which is what most brokers need.
     *
     * @return the topic's name; a new one on each call
     */
    protected String topicTheBrokerMustWaitFor() {
        return "contract-unknown-" + UUID.randomUUID();
    }

    /**
     * G6 at the broker: the dispatcher sends every key's records from one thread, so a send that waits on one
     * topic (metadata, a missing topic) would hold up every key. {@code send} must return at once and let that
     * record wait (or fail) on its own; records of other topics sent after it are acknowledged meanwhile. A broker
     * that decides such a record at once (accepting or refusing it within a second) passes trivially.
     */
    @Test
    void aRecordWhoseTopicTheBrokerMustWaitForHoldsUpNoOtherRecord() {
        String healthy = newTopic();
        OutboxRecord waiting = record(OutboxMessage.of(topicTheBrokerMustWaitFor(), "waiting", "for its topic"));
        long started = System.nanoTime();
        CompletableFuture<Long> waitingDone = new CompletableFuture<>();
        try {
            broker.send(waiting).whenComplete((v, e) -> waitingDone.complete(System.nanoTime()));
        } catch (RuntimeException thrown) {
            waitingDone.complete(System.nanoTime());
        }
        long sendNanos = System.nanoTime() - started;
        List<OutboxRecord> others = new ArrayList<>();
        List<CompletionStage<Void>> stages = new ArrayList<>();
        List<CompletableFuture<Long>> acknowledged = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            OutboxRecord r = record(OutboxMessage.of(healthy, "key-" + i, "other " + i));
            others.add(r);
            CompletionStage<Void> stage = broker.send(r);
            CompletableFuture<Long> at = new CompletableFuture<>();
            stage.whenComplete((v, e) -> at.complete(System.nanoTime()));
            stages.add(stage);
            acknowledged.add(at);
        }
        assertThat(awaitAll(stages)).as("the other topic's records").allMatch(o -> o.failure() == null);
        long waitedNanos = waitingDone.orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS).join() - started;
        if (waitedNanos >= TimeUnit.SECONDS.toNanos(1)) { // the broker did wait for the topic
            assertThat(TimeUnit.NANOSECONDS.toMillis(sendNanos))
                    .as("ms the send of the waiting record blocked its caller (it completed after %d ms)",
                            TimeUnit.NANOSECONDS.toMillis(waitedNanos))
                    .isLessThan(TimeUnit.NANOSECONDS.toMillis(waitedNanos) / 2);
            for (CompletableFuture<Long> at : acknowledged) {
                assertThat(at.join() - started).as("an other topic's record was acknowledged before the waiting"
                        + " record completed").isLessThan(waitedNanos);
            }
        }
        assertThat(readBack(healthy, others.size(), WAIT)).containsExactlyInAnyOrderElementsOf(
                others.stream().map(ReceivedMessage::of).toList());
    }

    @Test
    void aRecordThatCanNeverBeAcceptedFailsPermanentlyAndTheBrokerGoesOn() {
        String topic = newTopic();
        OutboxRecord bad = permanentlyFailingRecord(topic);

        Throwable failure;
        try {
            failure = await(broker.send(bad)).failure();
        } catch (RuntimeException thrown) {
            failure = thrown;
        }

        assertThat(failure).as("failure of the bad record").isInstanceOf(DeliveryException.class);
        assertThat(((DeliveryException) failure).isPermanent()).as("permanent").isTrue();
        OutboxRecord good = record(OutboxMessage.of(topic, "good", "after the bad one"));
        assertThat(await(broker.send(good)).failure()).isNull();
        assertThat(readBack(topic, 1, WAIT)).containsExactly(ReceivedMessage.of(good));
    }

    @Test
    void flushWaitsForEveryRecordSentSoFar() {
        String topic = newTopic();
        List<CompletionStage<Void>> stages = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            stages.add(broker.send(record(OutboxMessage.of(topic, "k" + (i % 10), "v" + i))));
        }

        boolean flushed = broker.flush(WAIT);

        assertThat(flushed).as("flush returned in time").isTrue();
        for (int i = 0; i < stages.size(); i++) {
            assertThat(isDone(stages.get(i))).as("stage %d done when flush returned", i).isTrue();
        }
        assertThat(awaitAll(stages)).extracting(Outcome::failure).containsOnlyNulls();
        assertThat(readBack(topic, 200, WAIT)).hasSize(200);
    }

    @Test
    void flushOfAnIdleBrokerReturnsTrue() {
        assertThat(broker.flush(Duration.ofSeconds(10))).isTrue();
    }

    @Test
    void closeCompletesEveryPendingSendAndIsIdempotent() {
        String topic = newTopic();
        List<CompletionStage<Void>> stages = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            stages.add(broker.send(record(OutboxMessage.of(topic, "k" + (i % 5), "v" + i))));
        }

        broker.close(WAIT);

        for (int i = 0; i < stages.size(); i++) {
            assertThat(isDone(stages.get(i))).as("stage %d done when close returned", i).isTrue();
        }
        List<Outcome> outcomes = awaitAll(stages);
        long acknowledged = outcomes.stream().filter(o -> o.failure() == null).count();
        assertThat(acknowledged).as("acknowledged within the close timeout").isEqualTo(50);
        assertThat(readBack(topic, 50, WAIT)).hasSize(50);
        Instant start = Instant.now();
        broker.close(WAIT);
        broker.close(Duration.ofSeconds(1));
        assertThat(Duration.between(start, Instant.now())).as("closing again").isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void sendAfterCloseFailsCleanly() {
        String topic = newTopic();
        broker.close(Duration.ofSeconds(10));

        Throwable failure;
        try {
            CompletionStage<Void> stage = broker.send(record(OutboxMessage.of(topic, "k", "after close")));
            assertThat(stage).as("stage returned by send after close").isNotNull();
            failure = await(stage).failure();
        } catch (RuntimeException thrown) {
            failure = thrown;
        }

        assertThat(failure).as("failure of a send after close").isNotNull()
                .isNotInstanceOf(NullPointerException.class);
    }

    // ---- helpers ------------------------------------------------------------------------------------------

    /**
     * A record of {@code message} with a fresh id, created now, never failed before.
     *
     * @param message the message to send; not {@code null}
     * @return a record with an id unique in this JVM, a random leader id and no message id
     */
    protected static OutboxRecord record(OutboxMessage message) {
        return new OutboxRecord(IDS.incrementAndGet(), Instant.now(), message, 0, UUID.randomUUID());
    }

    /**
     * How one send ended: {@code failure} is null when it was acknowledged.
     *
     * @param failure why the send failed, unwrapped from {@code CompletionException}s; {@code null} if it was
     *                acknowledged
     */
    protected record Outcome(Throwable failure) {
    }

    /**
     * Waits for {@code stage} (at most {@link #WAIT}); returns how it ended, unwrapping completion wrappers.
     *
     * @param stage a stage {@code send} returned
     * @return how it completed
     * @throws AssertionError if {@code stage} is {@code null}, did not complete within {@link #WAIT}, or the
     *                        thread was interrupted
     */
    protected static Outcome await(CompletionStage<Void> stage) {
        assertThat(stage).as("stage returned by send").isNotNull();
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        stage.whenComplete((v, e) -> outcome.complete(new Outcome(unwrap(e))));
        try {
            return outcome.get(WAIT.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("send did not complete within " + WAIT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } catch (ExecutionException e) {
            throw new AssertionError("unreachable", e);
        }
    }

    /**
     * Waits for every stage, in order; returns their outcomes.
     *
     * @param stages stages {@code send} returned; each is awaited up to {@link #WAIT}
     * @return their outcomes, in the iteration order of {@code stages}
     * @throws AssertionError as {@link #await} does
     */
    protected static List<Outcome> awaitAll(Collection<CompletionStage<Void>> stages) {
        List<Outcome> outcomes = new ArrayList<>(stages.size());
        for (CompletionStage<Void> stage : stages) {
            outcomes.add(await(stage));
        }
        return outcomes;
    }

    private static boolean isDone(CompletionStage<Void> stage) {
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        stage.whenComplete((v, e) -> done.complete(true));
        // a completed stage runs the action at once, on this thread
        return done.getNow(false);
    }

    private static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static Map<String, ReceivedMessage> byKey(List<ReceivedMessage> messages) {
        Map<String, ReceivedMessage> result = new HashMap<>();
        for (ReceivedMessage m : messages) {
            result.put(m.key(), m);
        }
        return result;
    }

    /**
     * The value of a message decoded as UTF-8.
     *
     * @param value a message's or header's value bytes, {@code null} for a tombstone (or a null header value)
     * @return the text, or {@code null} if {@code value} is {@code null}
     */
    protected static String utf8(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
}
