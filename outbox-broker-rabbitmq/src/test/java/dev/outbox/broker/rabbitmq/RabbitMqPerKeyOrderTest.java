package dev.outbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DeliverCallback;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxRecord;
import dev.outbox.spi.MessageBroker;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.rabbit;
import static dev.outbox.broker.rabbitmq.RabbitMqTestSupport.withChannel;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Per-key order end to end on the documented topology: a dispatcher publishes many keys through the consistent-hash
 * exchange to four single-active-consumer queues, each with two competing consumers; a third of the way, with one
 * queue holding its keys' records in flight, every connection (the dispatcher's and the consumers') is killed.
 * Consumers see each key's records in order — a repeat of the
 * latest one allowed, never an older one after a newer — and all of them.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RabbitMqPerKeyOrderTest {
    private static final int KEYS = 40;
    private static final int PER_KEY = 30;

    private final Map<String, Integer> last = new ConcurrentHashMap<>();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final Map<String, Boolean> seen = new ConcurrentHashMap<>();
    private final AtomicInteger deliveries = new AtomicInteger();
    private final List<Throwable> sendFailures = new CopyOnWriteArrayList<>();

    @Test
    void consumersOfThePerKeyTopologySeeEveryKeyInOrderAcrossKilledConnections() throws Exception {
        String exchange = "per-key-" + UUID.randomUUID();
        RabbitMqTopology topology = RabbitMqTopology.perKey(exchange, 4);
        withChannel(ch -> {
            topology.declare(ch);
            return null;
        });
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbit().uri());
        factory.setNetworkRecoveryInterval(200); // the client's own recovery, for the consumers
        List<Connection> consumers = new ArrayList<>();
        InMemoryStore store = new InMemoryStore();
        RabbitMqMessageBroker broker = RabbitMqMessageBroker.builder().uri(rabbit().uri()).build();
        MessageBroker watched = new MessageBroker() { // the broker, with the failures it reports recorded
            @Override
            public CompletionStage<Void> send(OutboxRecord record) {
                return broker.send(record).whenComplete((v, e) -> {
                    if (e != null) {
                        sendFailures.add(e);
                    }
                });
            }

            @Override
            public boolean flush(Duration timeout) {
                return broker.flush(timeout);
            }

            @Override
            public void close(Duration timeout) {
                broker.close(timeout);
            }
        };
        Dispatcher dispatcher = Dispatcher.builder(store, watched).name("per-key")
                .config(DispatcherConfig.builder().ioErrorBackoff(Duration.ofMillis(100))
                        .maxIoErrorBackoff(Duration.ofMillis(500)).build()).build();
        try {
            for (int c = 0; c < 2; c++) { // two consumers per queue, on two connections: one active at a time
                Connection connection = factory.newConnection("per-key-consumer-" + c);
                consumers.add(connection);
                for (String queue : topology.queues()) {
                    Channel ch = connection.createChannel();
                    ch.basicQos(50);
                    ch.basicConsume(queue, false, consumer(ch), tag -> { });
                }
            }
            dispatcher.start();

            write(store, exchange, 0, PER_KEY / 3);
            Await.untilOrFail(() -> deliveries.get() >= KEYS * (PER_KEY / 3), Duration.ofSeconds(30),
                    () -> "the first third delivered");
            // One queue stops confirming, so that its keys' records stay in flight while the rest are written; then
            // every connection is killed, the dispatcher's and the consumers'.
            String stalled = topology.queues().get(0);
            RabbitMqTestSupport.suspendQueue(stalled);
            try {
                write(store, exchange, PER_KEY / 3, PER_KEY);
                Await.untilOrFail(() -> broker.pendingRecords() > 0, Duration.ofSeconds(10), () -> "records in flight");
                RabbitMqTestSupport.killAllConnections();
                Await.untilOrFail(() -> sendFailures.stream().anyMatch(e -> String.valueOf(e.getMessage())
                        .contains("closed the connection before it confirmed")), Duration.ofSeconds(10),
                        () -> "in-flight records failed");
            } finally {
                RabbitMqTestSupport.resumeQueue(stalled);
            }

            Await.untilOrFail(() -> seen.size() == KEYS * PER_KEY && store.size() == 0, Duration.ofSeconds(60),
                    () -> seen.size() + " of " + KEYS * PER_KEY + " records seen, " + store.size() + " in the outbox");
            assertThat(violations).as("per-key order violations").isEmpty();
            assertThat(store.parkedRows()).as("parked").isEmpty();
            assertThat(deliveries.get() - seen.size()).as("duplicates: at most what was in flight at the kill")
                    .isLessThanOrEqualTo(KEYS * 2 + 4 * 50 * 2);
        } finally {
            dispatcher.close();
            broker.close();
            for (Connection c : consumers) {
                c.abort(1000);
            }
        }
    }

    /** Writes records {@code from} to {@code to - 1} of every key, one transaction per round of keys. */
    private static void write(InMemoryStore store, String exchange, int from, int to) {
        for (int i = from; i < to; i++) {
            try (InMemoryStore.Transaction tx = store.begin()) {
                for (int k = 0; k < KEYS; k++) {
                    tx.write(OutboxMessage.of(exchange, "key-" + k, Integer.toString(i)));
                }
                tx.commit();
            }
        }
    }

    private DeliverCallback consumer(Channel channel) {
        return (tag, delivery) -> {
            String key = delivery.getEnvelope().getRoutingKey();
            int seq = Integer.parseInt(new String(delivery.getBody(), StandardCharsets.UTF_8));
            deliveries.incrementAndGet();
            Integer before = last.get(key);
            if (before != null && seq < before) {
                violations.add(key + ": " + seq + " after " + before);
            } else if (before != null && seq > before + 1) {
                violations.add(key + ": gap, " + seq + " after " + before);
            } else if (before == null && seq != 0) {
                violations.add(key + ": first record seen is " + seq);
            }
            last.merge(key, seq, Math::max);
            seen.put(key + "/" + seq, Boolean.TRUE);
            channel.basicAck(delivery.getEnvelope().getDeliveryTag(), false);
        };
    }
}
