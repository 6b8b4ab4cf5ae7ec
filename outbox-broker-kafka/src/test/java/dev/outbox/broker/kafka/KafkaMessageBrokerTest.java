package dev.outbox.broker.kafka;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What {@link KafkaMessageBroker} adds to the contract, against a real in-process broker. */
class KafkaMessageBrokerTest {
    private static final AtomicLong IDS = new AtomicLong();
    private static KafkaServer kafka;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    private static String newTopic(int partitions) {
        String t = "broker-" + UUID.randomUUID();
        kafka.createTopic(t, partitions);
        return t;
    }

    private static OutboxRecord record(OutboxMessage m, Instant createdAt) {
        return new OutboxRecord(IDS.incrementAndGet(), createdAt, m, 0, UUID.randomUUID());
    }

    private static OutboxRecord record(String topic, String key, String value) {
        return record(OutboxMessage.of(topic, key, value), Instant.now());
    }

    /**
     * With a linger far longer than the wait, a record is acknowledged only because {@code sendPending} flushed the
     * producer's batch; the call itself returns at once (the flush runs on the broker's own thread).
     */
    @Test
    void sendPendingSendsALingeringBatchAtOnceWithoutWaitingForIt() throws Exception {
        String topic = newTopic(1);
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("linger.ms", 60_000).deliveryTimeout(Duration.ofMinutes(2)).build()) {
            broker.send(record(topic, "k", "warm-up")); // metadata fetched; its batch lingers
            CompletionStage<Void> lingering = broker.send(record(topic, "k", "lingering"));
            long started = System.nanoTime();
            broker.sendPending();
            broker.sendPending(); // coalesced with the first while its flush runs
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("sendPending does not wait")
                    .isLessThan(Duration.ofSeconds(5));
            lingering.toCompletableFuture().get(20, TimeUnit.SECONDS); // not 60 s: the batch was sent
            CompletionStage<Void> next = broker.send(record(topic, "k", "next"));
            broker.sendPending();
            next.toCompletableFuture().get(20, TimeUnit.SECONDS);
        }
        assertThat(KafkaReader.readToEnd(kafka.bootstrapServers(), topic, Duration.ofSeconds(20))).hasSize(3);
    }

    private static DeliveryException failure(CompletionStage<Void> stage, Duration timeout) throws Exception {
        try {
            stage.toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(DeliveryException.class);
            return (DeliveryException) e.getCause();
        }
        throw new AssertionError("expected the send to fail");
    }

    @Test
    void publishesKeyValueHeadersInOrderTombstonesAndTheCreationTime() throws Exception {
        String topic = newTopic(3);
        Instant createdAt = Instant.parse("2026-01-02T03:04:05.678Z");
        OutboxMessage withHeaders = OutboxMessage.builder(topic, "k-1").value("v1")
                .header("b", "2").header("a", "1").header("b", "3").header("empty", (byte[]) null).build();
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            broker.send(record(withHeaders, createdAt)).toCompletableFuture().get(10, TimeUnit.SECONDS);
            broker.send(record(OutboxMessage.tombstone(topic, "k-1"), createdAt.plusMillis(1)))
                    .toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        List<ConsumerRecord<String, byte[]>> got = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(10));
        assertThat(got).hasSize(2);
        ConsumerRecord<String, byte[]> first = got.get(0);
        assertThat(first.partition()).isEqualTo(got.get(1).partition()); // one key, one partition
        assertThat(first.key()).isEqualTo("k-1");
        assertThat(new String(first.value(), StandardCharsets.UTF_8)).isEqualTo("v1");
        List<String> headers = new ArrayList<>();
        first.headers().forEach(h -> headers.add(h.key() + "=" + (h.value() == null ? "null"
                : new String(h.value(), StandardCharsets.UTF_8))));
        assertThat(headers).containsExactly("b=2", "a=1", "b=3", "empty=null");
        assertThat(first.timestampType()).isEqualTo(TimestampType.CREATE_TIME);
        assertThat(first.timestamp()).isEqualTo(createdAt.toEpochMilli());
        assertThat(got.get(1).key()).isEqualTo("k-1");
        assertThat(got.get(1).value()).isNull();
    }

    @Test
    void theMessageIdAndTheCreationTimeTravelAsHeadersAfterTheMessagesOwn() throws Exception {
        String topic = newTopic(1);
        Instant createdAt = Instant.parse("2026-01-02T03:04:05.678Z");
        UUID messageId = dev.outbox.MessageIds.next();
        OutboxMessage m = OutboxMessage.builder(topic, "k").value("v").header("outbox-message-id", "forged").build();
        try (KafkaMessageBroker defaults = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build();
             KafkaMessageBroker custom = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                     .messageIdHeader("event-id").createdAtHeader("event-created").build()) {
            defaults.send(new OutboxRecord(IDS.incrementAndGet(), createdAt, m, 0, UUID.randomUUID(), messageId))
                    .toCompletableFuture().get(10, TimeUnit.SECONDS);
            custom.send(new OutboxRecord(IDS.incrementAndGet(), createdAt, m, 0, UUID.randomUUID(), messageId))
                    .toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        List<ConsumerRecord<String, byte[]>> got = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(10));
        assertThat(got).hasSize(2);
        assertThat(new String(got.get(0).headers().lastHeader("outbox-message-id").value(), StandardCharsets.US_ASCII))
                .as("the outbox's id comes last, after a header of the same name the application set")
                .isEqualTo(messageId.toString());
        assertThat(dev.outbox.MessageIds.fromHeader(got.get(0).headers().lastHeader("outbox-message-id").value()))
                .isEqualTo(messageId);
        assertThat(got.get(0).headers().lastHeader("event-created")).isNull();
        assertThat(new String(got.get(1).headers().lastHeader("event-id").value(), StandardCharsets.US_ASCII))
                .isEqualTo(messageId.toString());
        assertThat(new String(got.get(1).headers().lastHeader("event-created").value(), StandardCharsets.US_ASCII))
                .isEqualTo("2026-01-02T03:04:05.678Z");
        assertThat(new String(got.get(1).headers().lastHeader("outbox-message-id").value(), StandardCharsets.UTF_8))
                .as("the application's own header is kept").isEqualTo("forged");
        assertThatThrownBy(() -> KafkaMessageBroker.builder().messageIdHeader(" ")).hasMessageContaining(
                "messageIdHeader");
    }

    @Test
    void sendTimeTimestampsIgnoreTheCreationTime() throws Exception {
        String topic = newTopic(1);
        Instant old = Instant.now().minus(3, ChronoUnit.DAYS);
        long before = System.currentTimeMillis();
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .recordTimestamp(KafkaMessageBroker.RecordTimestamp.SEND_TIME).build()) {
            broker.send(record(OutboxMessage.of(topic, "k", "v"), old)).toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        ConsumerRecord<String, byte[]> r = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(10)).get(0);
        assertThat(r.timestamp()).isGreaterThanOrEqualTo(before);
    }

    @Test
    void recordsTooLargeForTheProducerOrTheBrokerFailPermanently() throws Exception {
        String topic = newTopic(1);
        byte[] twoMegabytes = new byte[2 * 1024 * 1024];
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            DeliveryException e = failure(broker.send(record(OutboxMessage.of(topic, "k", twoMegabytes),
                    Instant.now())), Duration.ofSeconds(10));
            assertThat(e.isPermanent()).isTrue();
            assertThat(e).hasMessageContaining("RecordTooLargeException");
        }
        // A producer allowed larger requests gets the broker's own rejection (message.max.bytes is ~1 MB).
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("max.request.size", 8 * 1024 * 1024).build()) {
            DeliveryException e = failure(broker.send(record(OutboxMessage.of(topic, "k", twoMegabytes),
                    Instant.now())), Duration.ofSeconds(15));
            assertThat(e.isPermanent()).as("%s", e).isTrue();
            // The producer keeps working for other records.
            broker.send(record(topic, "k2", "fine")).toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void illegalTopicNamesFailPermanentlyAtOnce() throws Exception {
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            long started = System.nanoTime();
            DeliveryException e = failure(broker.send(record("orders/eu", "k", "v")), Duration.ofSeconds(1));
            assertThat(e.isPermanent()).isTrue();
            assertThat(e).hasMessageContaining("'orders/eu'").hasMessageContaining("'/'");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(500);
        }
    }

    @Test
    void aTopicThatDoesNotExistFailsPermanentlyAndFurtherSendsFailWithoutBlocking() throws Exception {
        // The test broker does not auto-create topics.
        String missing = "missing-" + UUID.randomUUID();
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("max.block.ms", 500).build()) {
            DeliveryException e = failure(broker.send(record(missing, "k", "v")), Duration.ofSeconds(15));
            assertThat(e.isPermanent()).as("%s", e).isTrue();
            assertThat(e).hasMessageContaining("'" + missing + "' does not exist");
            long started = System.nanoTime();
            DeliveryException again = failure(broker.send(record(missing, "k", "v2")), Duration.ofSeconds(1));
            assertThat(again.isPermanent()).isTrue();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(400);
            Await.untilOrFail(() -> broker.pendingRecords() == 0, Duration.ofSeconds(1), () -> "nothing pending");
        }
    }

    @Test
    void aTopicCreatedRightAfterItWasFoundMissingIsSentToAtOnce() throws Exception {
        // An operator creates the topic and replays the parked records within seconds: the broker must not go on
        // failing them from its memory of the missing topic.
        String late = "late-" + UUID.randomUUID();
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("max.block.ms", 500).build()) {
            DeliveryException e = failure(broker.send(record(late, "k", "v")), Duration.ofSeconds(15));
            assertThat(e.isPermanent()).as("%s", e).isTrue();
            kafka.createTopic(late, 1);
            broker.send(record(late, "k", "v2")).toCompletableFuture().get(15, TimeUnit.SECONDS);
        }
    }

    @Test
    void aTopicThatDoesNotExistFailsPermanentlyAtOnceWithAShortDeliveryTimeout() throws Exception {
        // The producer's metadata wait (max.block.ms) must leave the admin check time to confirm that the topic is
        // missing, within delivery.timeout.ms. Otherwise the record fails retriably, is reset and sent again, and
        // every attempt blocks the dispatcher's sends for max.block.ms. Each broker is new, so each check also
        // has to create its admin client first.
        for (int attempt = 0; attempt < 3; attempt++) {
            String missing = "missing-" + UUID.randomUUID();
            try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                    .deliveryTimeout(Duration.ofSeconds(2)).build()) {
                long started = System.nanoTime();
                DeliveryException e = failure(broker.send(record(missing, "k", "v")), Duration.ofSeconds(10));
                assertThat(e.isPermanent()).as("attempt %d: %s", attempt, e).isTrue();
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                        .as("completed within about delivery.timeout.ms").isLessThan(3_000);
            }
        }
    }

    @Test
    void sendNeverBlocksLongerThanMaxBlockWhenKafkaIsUnreachable() throws Exception {
        int deadPort;
        try (ServerSocket s = new ServerSocket(0)) {
            deadPort = s.getLocalPort();
        }
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers("127.0.0.1:" + deadPort)
                .deliveryTimeout(Duration.ofSeconds(2)).property("max.block.ms", 300).build()) {
            long started = System.nanoTime();
            CompletionStage<Void> stage = broker.send(record("nowhere", "k", "v"));
            long blockedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            DeliveryException e = failure(stage, Duration.ofSeconds(5));
            long completedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertThat(blockedMs).isLessThan(1_000);
            assertThat(completedMs).as("completed within about delivery.timeout.ms").isLessThan(3_000);
            assertThat(e.isPermanent()).as("%s", e).isFalse();
            Await.untilOrFail(() -> broker.pendingRecords() == 0, Duration.ofSeconds(1), () -> "nothing pending");
        }
    }

    @Test
    void flushWaitsForEveryAcknowledgement() throws Exception {
        String topic = newTopic(4);
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("linger.ms", 50).build()) {
            List<CompletableFuture<Void>> stages = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                stages.add(broker.send(record(topic, "k" + (i % 37), "v" + i)).toCompletableFuture());
            }
            assertThat(broker.flush(Duration.ofSeconds(20))).isTrue();
            assertThat(stages).allMatch(f -> f.isDone() && !f.isCompletedExceptionally());
            Await.untilOrFail(() -> broker.pendingRecords() == 0, Duration.ofSeconds(1), () -> "nothing pending");
        }
    }

    @Test
    void sendAfterCloseFailsRetriably() throws Exception {
        KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers()).build();
        broker.close(Duration.ofSeconds(1));
        broker.close(Duration.ofSeconds(1)); // idempotent
        DeliveryException e = failure(broker.send(record("any", "k", "v")), Duration.ofSeconds(1));
        assertThat(e.isPermanent()).isFalse();
    }

    /**
     * A broker whose records linger in the producer for a minute, holding 20 small records of {@code topic}
     * that were never sent, after two large ones that were (a partition's batch goes out before linger.ms once
     * a second batch queues behind it).
     */
    private static KafkaMessageBroker lingeringBroker(String topic, List<CompletableFuture<Void>> late,
                                                      AtomicLong sentEarly) throws Exception {
        KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .property("linger.ms", 60_000).property("batch.size", 16_384)
                .deliveryTimeout(Duration.ofSeconds(90)).property("request.timeout.ms", 2_000).build();
        CompletableFuture<Void> big1 = broker.send(record(OutboxMessage.of(topic, "k", new byte[20_000]),
                Instant.now())).toCompletableFuture();
        CompletableFuture<Void> big2 = broker.send(record(OutboxMessage.of(topic, "k", new byte[20_000]),
                Instant.now())).toCompletableFuture();
        big1.get(10, TimeUnit.SECONDS);
        List<CompletableFuture<Void>> small = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            small.add(broker.send(record(topic, "k", "late-" + i)).toCompletableFuture());
        }
        big2.get(10, TimeUnit.SECONDS);
        // The first small records may have joined the second large one's batch; the rest linger.
        assertThat(broker.flush(Duration.ofMillis(200))).isFalse();
        for (CompletableFuture<Void> f : small) {
            if (!f.isDone()) {
                late.add(f);
            } else {
                f.get();
                sentEarly.incrementAndGet();
            }
        }
        assertThat(late).hasSizeGreaterThanOrEqualTo(10);
        return broker;
    }

    private static void assertFailedRetriably(List<CompletableFuture<Void>> stages) {
        for (CompletableFuture<Void> f : stages) {
            assertThat(f).isCompletedExceptionally();
            assertThatThrownBy(f::get).cause().isInstanceOf(DeliveryException.class)
                    .matches(e -> !((DeliveryException) e).isPermanent(), "retriable");
        }
    }

    private static long landed(String topic) {
        return KafkaReader.readToEnd(kafka.bootstrapServers(), topic, Duration.ofSeconds(30)).size();
    }

    @Test
    void closeWithoutTimeLeftFailsWhatTheProducerHoldsAndNothingOfItLands() throws Exception {
        String topic = newTopic(1);
        List<CompletableFuture<Void>> late = new ArrayList<>();
        AtomicLong sentEarly = new AtomicLong();
        KafkaMessageBroker broker = lingeringBroker(topic, late, sentEarly);
        broker.close(Duration.ZERO);
        assertFailedRetriably(late);
        assertThat(broker.pendingRecords()).isZero();
        assertThat(landed(topic)).isEqualTo(2 + sentEarly.get());
    }

    @Test
    void closeIsBoundedWhileKafkaIsDownAndNothingLandsWhenItReturns() throws Exception {
        String topic = newTopic(1);
        List<CompletableFuture<Void>> late = new ArrayList<>();
        AtomicLong sentEarly = new AtomicLong();
        KafkaMessageBroker broker = lingeringBroker(topic, late, sentEarly);
        try {
            kafka.stop();
            long started = System.nanoTime();
            broker.close(Duration.ofMillis(500)); // tries to deliver for 500 ms, then gives up
            long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            System.out.println("close(500 ms) with Kafka down returned after " + closeMs + " ms");
            assertThat(closeMs).isLessThan(2_000);
            assertFailedRetriably(late);
            assertThat(broker.pendingRecords()).isZero();
        } finally {
            kafka.restart();
        }
        // The closed producer is gone: nothing it held reaches Kafka once the broker is back.
        assertThat(landed(topic)).isEqualTo(2 + sentEarly.get());
    }

    @Test
    void recordsOfOneKeyKeepTheirOrder() throws Exception {
        String topic = newTopic(3);
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            for (int i = 0; i < 50; i++) {
                // The dispatcher keeps one record per key in flight; so does this test.
                broker.send(record(topic, "key-" + (i % 5), Integer.toString(i))).toCompletableFuture()
                        .get(10, TimeUnit.SECONDS);
            }
        }
        List<ConsumerRecord<String, byte[]>> got = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(10));
        assertThat(got).hasSize(50);
        for (int k = 0; k < 5; k++) {
            String key = "key-" + k;
            List<Integer> values = got.stream().filter(r -> r.key().equals(key))
                    .map(r -> Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8))).toList();
            assertThat(values).isSorted().hasSize(10);
            assertThat(got.stream().filter(r -> r.key().equals(key)).map(ConsumerRecord::partition).distinct())
                    .hasSize(1);
        }
    }

    @Test
    void headersMayRepeatAndCarryBinaryValues() throws Exception {
        String topic = newTopic(1);
        byte[] binary = {0, (byte) 0xff, 7};
        OutboxMessage m = OutboxMessage.of(topic, "k", new byte[0], List.of(Header.of("bin", binary),
                Header.of("bin", binary)));
        try (KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .build()) {
            broker.send(record(m, Instant.now())).toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        ConsumerRecord<String, byte[]> r = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(10)).get(0);
        assertThat(r.value()).isEmpty();
        assertThat(r.headers().headers("bin")).hasSize(2).allSatisfy(h -> assertThat(h.value()).isEqualTo(binary));
    }
}
