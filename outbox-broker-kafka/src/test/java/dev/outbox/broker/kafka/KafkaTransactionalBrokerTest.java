package dev.outbox.broker.kafka;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherListener;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.spi.MessageBroker;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link KafkaMessageBroker} with a transactional id, against the real in-process Kafka: a newer producer of the id
 * fences the older one, whose sends then fail as fenced — which the dispatcher treats as a fence (no verdict on the
 * record, no attempt counted, nothing parked), not as a failure of the record — and a {@code read_committed}
 * consumer never sees what an aborted transaction wrote.
 */
class KafkaTransactionalBrokerTest {
    private static final AtomicLong IDS = new AtomicLong();
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static KafkaServer kafka;

    @BeforeAll
    static void kafka() {
        kafka = TestServers.kafka();
    }

    private static String newTopic() {
        String t = "txn-" + UUID.randomUUID();
        kafka.createTopic(t, 2);
        return t;
    }

    private static KafkaMessageBroker.Builder broker(String transactionalId) {
        return KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .deliveryTimeout(Duration.ofSeconds(5)).transactionalId(transactionalId);
    }

    private static OutboxRecord record(String topic, String key, String value) {
        return new OutboxRecord(IDS.incrementAndGet(), Instant.now(), OutboxMessage.of(topic, key, value), 0,
                UUID.randomUUID());
    }

    private static void acknowledged(CompletionStage<Void> stage) throws Exception {
        stage.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Sends until acknowledged, again after a retriable failure, at most three times. */
    private static void acknowledgedWithin3Attempts(java.util.function.Supplier<CompletionStage<Void>> send)
            throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                acknowledged(send.get());
                return;
            } catch (ExecutionException e) {
                if (attempt == 3 || !(e.getCause() instanceof DeliveryException d) || d.isPermanent() || d.isFenced()) {
                    throw e;
                }
                System.out.printf("transactional broker: attempt %d failed retriably (%s), sending again%n", attempt,
                        d.getMessage());
            }
        }
    }

    private static DeliveryException failure(CompletionStage<Void> stage) throws Exception {
        try {
            stage.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(DeliveryException.class);
            return (DeliveryException) e.getCause();
        }
        throw new AssertionError("expected the send to fail");
    }

    @Test
    void theSecondProducerOfAnIdFencesTheFirstWhoseSendsFailAsFencedAndAreNeverRead() throws Exception {
        String topic = newTopic();
        String id = "fence-" + topic;
        try (KafkaMessageBroker first = broker(id).build(); KafkaMessageBroker second = broker(id).build()) {
            acknowledged(first.send(record(topic, "k", "first-1")));
            // initTransactions fences the first. The new producer's first transaction may still fail retriably
            // (InvalidTxnStateException) while the coordinator finishes the fenced one; the engine sends it again.
            acknowledgedWithin3Attempts(() -> second.send(record(topic, "k", "second-1")));

            DeliveryException refused = failure(first.send(record(topic, "k", "zombie")));
            assertThat(refused.isFenced()).as("fenced, not %s: %s", refused.kind(), refused).isTrue();
            assertThat(refused.isPermanent()).isFalse();
            assertThat(refused.getMessage()).contains(id);
            assertThat(first.fencedRecords()).isEqualTo(1);

            acknowledged(second.send(record(topic, "k", "second-2"))); // the successor is undisturbed
            assertThat(second.fencedRecords()).isZero();
            assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 3, WAIT)))
                    .as("read_committed").containsExactly("first-1", "second-1", "second-2");
        }
    }

    /**
     * One record that can never be sent (larger than {@code max.request.size}) aborts the transaction it is in; it
     * fails permanently on its own, and the records that shared the transaction are sent again in the next one:
     * a {@code read_committed} consumer sees each once, and nothing of the aborted transaction. Whether the records
     * sent before the poison share its transaction depends on how fast the transaction thread starts; the producer
     * fails those it had not sent yet with the poison's own error, and they must still count as innocent. Several
     * rounds, so that both cases come up.
     */
    @Test
    void aRecordThatFailsOnItsOwnFailsAloneAndItsTransactionsOthersAreSentAgain() throws Exception {
        for (int round = 0; round < 4; round++) {
            String topic = newTopic();
            try (KafkaMessageBroker broker = broker("poison-" + topic).property("max.request.size", 10_000)
                    .build()) {
                List<CompletionStage<Void>> innocent = new ArrayList<>();
                innocent.add(broker.send(record(topic, "a", "a-1")));
                innocent.add(broker.send(record(topic, "b", "b-1")));
                innocent.add(broker.send(record(topic, "c", "c-1")));
                CompletionStage<Void> poison = broker.send(record(topic, "d", "x".repeat(20_000)));
                innocent.add(broker.send(record(topic, "e", "e-1")));
                DeliveryException refused = failure(poison);
                assertThat(refused.isPermanent()).as("%s", refused).isTrue();
                assertThat(refused.getMessage()).contains("key 'd'");
                for (CompletionStage<Void> s : innocent) {
                    acknowledged(s);
                }
                assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 4, WAIT)))
                        .as("read_committed").containsExactlyInAnyOrder("a-1", "b-1", "c-1", "e-1");
                List<String> uncommitted = values(readUncommitted(topic));
                assertThat(uncommitted).as("read_uncommitted sees at least as much").containsAll(
                        List.of("a-1", "b-1", "c-1", "e-1"));
                System.out.printf("transactional broker, round %d: a poison record failed alone; %d transaction(s)"
                        + " committed, read_uncommitted saw %d copies, read_committed 4%n", round,
                        broker.committedTransactions(), uncommitted.size());
            }
        }
    }

    /**
     * The engine's view: a dispatcher (always leader) whose producer a newer producer of its id fenced. Its next send
     * fails as fenced: the dispatcher reports a fence, counts no attempt, parks nothing, stands down, then — as it
     * still leads — sends again (its broker takes the id back) and delivers the record.
     */
    @Test
    void aDispatcherWhoseProducerWasFencedStandsDownWithoutCountingOrParkingAndDeliversOnceItSendsAgain()
            throws Exception {
        String topic = newTopic();
        String id = "engine-" + topic;
        InMemoryStore store = new InMemoryStore();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        KafkaMessageBroker mine = broker(id).build();
        DispatcherConfig config = DispatcherConfig.builder().ioErrorBackoff(Duration.ofMillis(200))
                .maxIoErrorBackoff(Duration.ofSeconds(1)).build();
        Dispatcher d = Dispatcher.builder(store, mine).config(config).name("txn-engine")
                .listener(new DispatcherListener() {
                    @Override
                    public void failure(String operation, Throwable error) {
                        failures.add(error);
                    }
                }).build();
        try (KafkaMessageBroker usurper = broker(id).build()) {
            d.start();
            write(store, topic, "k", "1");
            Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "record 1 delivered");
            acknowledged(usurper.send(record(topic, "u", "usurper"))); // fences the dispatcher's producer

            write(store, topic, "k", "2");
            Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "record 2 delivered after the stand-down");
            assertThat(mine.fencedRecords()).as("sends refused as fenced").isPositive();
            assertThat(failures).as("reported as a fence").isNotEmpty().allSatisfy(e ->
                    assertThat(e).isInstanceOfSatisfying(DeliveryException.class, x -> assertThat(x.isFenced())
                            .isTrue()));
            assertThat(store.parkedRows()).as("nothing parked").isEmpty();
            assertThat(d.health().outageSince()).as("a fence is no outage").isEmpty();
            assertThat(values(KafkaReader.readCommitted(kafka.bootstrapServers(), topic, 3, WAIT)))
                    .as("read_committed").containsExactlyInAnyOrder("1", "usurper", "2");
            // The usurper was fenced in its turn by the dispatcher's broker taking the id back.
            assertThat(failure(usurper.send(record(topic, "u", "late"))).isFenced()).isTrue();
        } finally {
            d.close();
            mine.close();
        }
    }

    @Test
    void aShardedOutboxGetsOneTransactionalProducerPerShardAndAPlainBrokerIsShared() throws Exception {
        String topic = newTopic();
        try (KafkaMessageBroker broker = broker("shards-" + topic).build();
             KafkaMessageBroker plain = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                     .build()) {
            MessageBroker s0 = broker.forShard(0);
            MessageBroker s1 = broker.forShard(1);
            assertThat(((KafkaMessageBroker) s0).transactionalId()).isEqualTo("shards-" + topic + "-shard-0");
            assertThat(((KafkaMessageBroker) s1).transactionalId()).isEqualTo("shards-" + topic + "-shard-1");
            // A topic just created may not be in every broker's metadata yet: a retriable failure, retried as the
            // engine would.
            acknowledgedWithin3Attempts(() -> s0.send(record(topic, "a", "s0")));
            acknowledgedWithin3Attempts(() -> s1.send(record(topic, "b", "s1"))); // a different id: s0 is not fenced
            acknowledged(s0.send(record(topic, "a", "s0-2")));
            assertThat(broker.fencedRecords()).isZero();
            assertThat(broker.committedTransactions()).isEqualTo(3);
            assertThat(plain.forShard(0)).isInstanceOf(dev.outbox.spi.SharedMessageBroker.class);
        }
    }

    @Test
    void aBadTransactionalIdIsRejectedNamingIt() {
        assertThatThrownBy(() -> KafkaMessageBroker.builder().transactionalId(" orders"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("' orders'");
        assertThatThrownBy(() -> KafkaMessageBroker.builder().transactionalId(""))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("transactionalId");
        assertThatThrownBy(() -> KafkaMessageBroker.builder().transactionalId("x".repeat(201)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("200");
        assertThatThrownBy(() -> KafkaMessageBroker.builder().bootstrapServers("localhost:1")
                .property("transactional.id", "orders").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("transactional.id")
                .hasMessageContaining("transactionalId(");
    }

    private static void write(InMemoryStore store, String topic, String key, String value) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            tx.write(OutboxMessage.of(topic, key, value));
            tx.commit();
        }
    }

    private static List<String> values(List<ConsumerRecord<String, byte[]>> records) {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<String, byte[]> r : records) {
            out.add(new String(r.value(), StandardCharsets.UTF_8));
        }
        return out;
    }

    /** Every record in the log, aborted ones included (Kafka's default isolation). */
    private static List<ConsumerRecord<String, byte[]>> readUncommitted(String topic) {
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"),
                new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, WAIT);
            List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(100)).forEach(out::add);
            }
            return out;
        }
    }
}
