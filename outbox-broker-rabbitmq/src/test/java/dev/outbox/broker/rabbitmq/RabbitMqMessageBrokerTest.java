package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.GetResponse;
import dev.outbox.MessageIds;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.DeliveryException;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.ReceivedMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.newTopic;
import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.rabbit;
import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.readBack;
import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.withChannel;
import static org.assertj.core.api.Assertions.assertThat;

/** What the RabbitMQ adapter does beyond the port's contract, on a real node: confirms, returns, nacks, faults. */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RabbitMqMessageBrokerTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final AtomicLong IDS = new AtomicLong();
    private final List<RabbitMqMessageBroker> brokers = new ArrayList<>();

    @AfterEach
    void close() {
        brokers.forEach(b -> b.close(Duration.ofSeconds(5)));
    }

    private RabbitMqMessageBroker broker(Duration confirmTimeout) {
        RabbitMqMessageBroker b = RabbitMqMessageBroker.builder().uri(rabbit().uri()).confirmTimeout(confirmTimeout)
                .build();
        brokers.add(b);
        return b;
    }

    private RabbitMqMessageBroker broker() {
        return broker(Duration.ofSeconds(8));
    }

    private static OutboxRecord record(String topic, String key, String value) {
        return record(OutboxMessage.of(topic, key, value));
    }

    private static OutboxRecord record(OutboxMessage m) {
        return new OutboxRecord(IDS.incrementAndGet(), Instant.now(), m, 0, UUID.randomUUID(), MessageIds.next());
    }

    /** How the stage ended: null when confirmed. */
    private static Throwable outcome(CompletionStage<Void> stage) {
        try {
            stage.toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause() instanceof CompletionException c ? c.getCause() : e.getCause();
        } catch (Exception e) {
            throw new AssertionError("send did not complete within " + WAIT, e);
        }
    }

    private static DeliveryException failure(CompletionStage<Void> stage) {
        Throwable t = outcome(stage);
        assertThat(t).as("send failure").isInstanceOf(DeliveryException.class);
        return (DeliveryException) t;
    }

    @Test
    void aConfirmedRecordIsPersistentWithItsRoutingKeyMessageIdContentTypeAndTime() {
        String topic = newTopic("props");
        OutboxRecord r = record(OutboxMessage.builder(topic, "order-7").value("{}")
                .header("content-type", "application/json").header("trace", "t-1").build());

        assertThat(outcome(broker().send(r))).isNull();

        GetResponse got = withChannel(ch -> ch.basicGet(topic, true));
        assertThat(got.getEnvelope().getRoutingKey()).isEqualTo("order-7");
        assertThat(got.getProps().getDeliveryMode()).as("persistent").isEqualTo(2);
        assertThat(got.getProps().getMessageId()).isEqualTo(r.messageId().toString());
        assertThat(RabbitMqHeaders.messageId(got.getProps())).isEqualTo(r.messageId());
        assertThat(got.getProps().getContentType()).isEqualTo("application/json");
        assertThat(got.getProps().getTimestamp().getTime() / 1000).isEqualTo(r.createdAt().getEpochSecond());
        assertThat(RabbitMqHeaders.headers(got.getProps())).isEqualTo(r.message().headers());
        assertThat(new String(got.getBody(), StandardCharsets.UTF_8)).isEqualTo("{}");
    }

    @Test
    void aStageCompletesOnlyOnceTheNodeConfirmed() {
        String topic = newTopic("confirms");
        RabbitMqMessageBroker broker = broker();
        assertThat(outcome(broker.send(record(topic, "k", "warm-up")))).isNull(); // the exchange is known now
        RabbitMqTestSupport.suspendQueue(topic);
        CompletionStage<Void> stage;
        try {
            stage = broker.send(record(topic, "k", "held"));
            assertThat(Await.until(() -> stage.toCompletableFuture().isDone(), Duration.ofMillis(500)))
                    .as("completed while its queue could not confirm it").isFalse();
            assertThat(broker.pendingRecords()).isEqualTo(1);
        } finally {
            RabbitMqTestSupport.resumeQueue(topic);
        }
        assertThat(outcome(stage)).isNull();
        assertThat(broker.pendingRecords()).isZero();
    }

    @Test
    void aConfirmOverdueFailsAsAnOutageWithinTheTimeout() {
        String topic = newTopic("overdue");
        RabbitMqMessageBroker broker = broker(Duration.ofMillis(500));
        assertThat(outcome(broker.send(record(topic, "k", "warm-up")))).isNull();
        RabbitMqTestSupport.suspendQueue(topic);
        try {
            long started = System.nanoTime();
            DeliveryException e = failure(broker.send(record(topic, "k", "late")));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

            assertThat(e.isOutage()).as(e.getMessage()).isTrue();
            assertThat(e.getMessage()).contains("did not confirm").contains("within 500 ms");
            assertThat(ms).isBetween(400L, 5_000L);
        } finally {
            RabbitMqTestSupport.resumeQueue(topic);
        }
    }

    @Test
    void aNackIsRetriable() {
        String topic = newTopic("nack", Map.of("x-max-length", 1, "x-overflow", "reject-publish"));
        RabbitMqMessageBroker broker = broker();

        assertThat(outcome(broker.send(record(topic, "k", "fits")))).isNull();
        OutboxRecord second = record(topic, "k", "queue full");
        DeliveryException e = failure(broker.send(second));

        assertThat(e.kind()).as(e.getMessage()).isEqualTo(DeliveryException.Kind.RETRIABLE);
        assertThat(e.getMessage()).contains("nack").contains("record " + second.id()).contains(topic);
        assertThat(outcome(broker.send(record(newTopic("after-nack"), "k", "fine")))).as("the broker goes on")
                .isNull();
    }

    @Test
    void anUnroutableRecordFailsPermanentlyNamingExchangeAndRoutingKey() {
        String exchange = "unbound-" + UUID.randomUUID();
        withChannel(ch -> ch.exchangeDeclare(exchange, "direct", true));
        RabbitMqMessageBroker broker = broker();

        DeliveryException e = failure(broker.send(record(exchange, "nobody-listens", "lost?")));

        assertThat(e.isPermanent()).as(e.getMessage()).isTrue();
        assertThat(e.getMessage()).contains("exchange '" + exchange + "'").contains("routing key 'nobody-listens'")
                .contains("NO_ROUTE");
        String topic = newTopic("after-return");
        assertThat(outcome(broker.send(record(topic, "k", "routed")))).isNull();
    }

    @Test
    void aMissingExchangeFailsPermanentlyAndHoldsUpNoOtherRecord() {
        String healthy = newTopic("healthy");
        RabbitMqMessageBroker broker = broker();
        String missing = "missing-" + UUID.randomUUID();

        CompletionStage<Void> bad = broker.send(record(missing, "k", "nowhere"));
        List<CompletionStage<Void>> good = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            good.add(broker.send(record(healthy, "k" + i, "v" + i)));
        }

        DeliveryException e = failure(bad);
        assertThat(e.isPermanent()).as(e.getMessage()).isTrue();
        assertThat(e.getMessage()).contains("exchange '" + missing + "' does not exist");
        assertThat(good).allSatisfy(s -> assertThat(outcome(s)).isNull());
        assertThat(readBack(healthy, 20, WAIT)).hasSize(20);
    }

    @Test
    void anExchangeDeletedAfterUseFailsItsRecordsPermanentlyAndTheBrokerRecovers() {
        String doomed = newTopic("doomed");
        RabbitMqMessageBroker broker = broker();
        assertThat(outcome(broker.send(record(doomed, "k", "while it exists")))).isNull();
        withChannel(ch -> ch.exchangeDelete(doomed));

        DeliveryException e = failure(broker.send(record(doomed, "k", "after delete")));

        assertThat(e.isPermanent()).as(e.getMessage()).isTrue();
        assertThat(e.getMessage()).contains("'" + doomed + "'");
        String topic = newTopic("after-delete");
        assertThat(Await.until(() -> outcome(broker.send(record(topic, "k", "again"))) == null, WAIT))
                .as("a send succeeds again").isTrue();
    }

    @Test
    void aConnectionKilledMidFlightFailsWhatWasInFlightAsAnOutageAndTheBrokerReconnects() {
        String topic = newTopic("killed");
        RabbitMqMessageBroker broker = broker();
        assertThat(outcome(broker.send(record(topic, "k", "warm-up")))).isNull();
        RabbitMqTestSupport.suspendQueue(topic);
        List<CompletionStage<Void>> inFlight = new ArrayList<>();
        CompletableFuture<Integer> killed;
        try {
            for (int i = 0; i < 50; i++) {
                inFlight.add(broker.send(record(topic, "k" + i, "in flight " + i)));
            }
            assertThat(broker.pendingRecords()).isEqualTo(50);

            // In the background: the node finishes closing a connection only once its channels have told their
            // queues, and this one's queue is suspended until the end of the test.
            killed = CompletableFuture.supplyAsync(() -> rabbit().closeAllConnections());

            for (CompletionStage<Void> s : inFlight) {
                DeliveryException e = failure(s);
                assertThat(e.isOutage()).as(e.getMessage()).isTrue();
                assertThat(e.getMessage()).contains("CONNECTION_FORCED");
            }
        } finally {
            RabbitMqTestSupport.resumeQueue(topic);
        }
        assertThat(killed.join()).isGreaterThanOrEqualTo(1);
        String after = newTopic("after-kill");
        Await.untilOrFail(() -> outcome(broker.send(record(after, "k", "again"))) == null, WAIT,
                () -> "a send after the connection was killed");
        assertThat(readBack(after, 1, WAIT)).hasSize(1);
    }

    @Test
    void aNodeRestartFailsSendsQuicklyMeanwhileAndPublishingResumesAfter() {
        String topic = newTopic("restart");
        RabbitMqMessageBroker broker = broker();
        OutboxRecord before = record(topic, "k", "before");
        assertThat(outcome(broker.send(before))).isNull();

        rabbit().stop();
        try {
            long started = System.nanoTime();
            DeliveryException e = failure(broker.send(record(topic, "k", "while down")));
            assertThat(e.isOutage()).as(e.getMessage()).isTrue();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).as("ms to fail").isLessThan(1_000);
        } finally {
            rabbit().restart();
        }

        OutboxRecord after = record(topic, "k", "after");
        Await.untilOrFail(() -> outcome(broker.send(after)) == null, WAIT, () -> "a send after the restart");
        List<ReceivedMessage> got = readBack(topic, 2, WAIT);
        assertThat(got).extracting(ReceivedMessage::valueAsString).startsWith("before").contains("after");
    }

    @Test
    void aReservedHeaderOrATooLongKeyFailsPermanentlyBeforeSending() {
        String topic = newTopic("reserved");
        RabbitMqMessageBroker broker = broker();

        DeliveryException reserved = failure(broker.send(record(OutboxMessage.builder(topic, "k").value("v")
                .header("outbox-tombstone", "no").build())));
        DeliveryException longKey = failure(broker.send(record(topic, "é".repeat(128), "v")));

        assertThat(reserved.isPermanent()).isTrue();
        assertThat(reserved.getMessage()).contains("'outbox-tombstone'").contains("reserves");
        assertThat(longKey.isPermanent()).isTrue();
        assertThat(longKey.getMessage()).contains("routing key is 256 bytes long");
    }

    @Test
    void sendsAreNeverHeldUpWhileTheNodeIsUnreachable() {
        RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder().uri("amqp://guest:guest@127.0.0.1:1/%2F")
                .operationTimeout(Duration.ofMillis(500)).build();
        brokers.add(broker);

        long started = System.nanoTime();
        DeliveryException e = failure(broker.send(record("anything", "k", "v")));

        assertThat(e.isOutage()).as(e.getMessage()).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(1_000);
        assertThat(broker.toString()).doesNotContain("guest:guest");
    }

    @Test
    void closeFailsWhatIsStillUnconfirmedAndReturnsWithinItsBound() {
        String topic = newTopic("close");
        RabbitMqMessageBroker broker = broker();
        assertThat(outcome(broker.send(record(topic, "k", "warm-up")))).isNull();
        RabbitMqTestSupport.suspendQueue(topic);
        try {
            CompletableFuture<Void> stage = broker.send(record(topic, "k", "unconfirmed")).toCompletableFuture();
            long started = System.nanoTime();
            broker.close(Duration.ofMillis(300));

            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(3_000);
            assertThat(stage).isCompletedExceptionally();
            assertThat(failure(stage).isPermanent()).isFalse();
            assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().startsWith("outbox-rabbitmq")
                    && t.isAlive() && !t.getName().startsWith("outbox-rabbitmq-io"));
        } finally {
            RabbitMqTestSupport.resumeQueue(topic);
        }
    }
}
