package dev.outbox.broker.kafka;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testkit.LeadershipTimeline;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three dispatchers harvest one (in-memory) outbox into real Kafka, electing their leader over
 * {@link KafkaLeaderTransport}, while a writer keeps committing over many keys; the leader is closed mid-stream,
 * then the next one. Every message must arrive, each key's sequence must never go backwards, and leadership
 * must never overlap.
 */
class KafkaDispatcherFailoverTest {
    private static final Duration POLL = Duration.ofMillis(100);
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(POLL)
            .heartbeatTimeout(Duration.ofSeconds(1)).drainTimeout(Duration.ofSeconds(3))
            .ioErrorBackoff(Duration.ofMillis(50)).maxIoErrorBackoff(Duration.ofMillis(500)).build();

    @Test
    void leadershipMovesOnCloseWithoutLossOrReordering() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        KafkaServer kafka = TestServers.kafka();
        String topic = "failover-" + UUID.randomUUID();
        String leaderTopic = topic + "-leader";
        kafka.createTopic(topic, 4);
        InMemoryStore store = new InMemoryStore();
        LeadershipTimeline timeline = new LeadershipTimeline();

        List<Dispatcher> dispatchers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String name = "d" + i;
            KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                    .deliveryTimeout(Duration.ofSeconds(2)).build();
            KafkaLeaderTransport transport = KafkaLeaderTransport.builder()
                    .bootstrapServers(kafka.bootstrapServers()).topic(leaderTopic)
                    .dispatcherConfig(CONFIG).deliveryTimeoutOf(broker)
                    .consumerProperty("session.timeout.ms", 6_000).build();
            dispatchers.add(Dispatcher.builder(store, broker).leaderTransport(transport).config(CONFIG).name(name)
                    .listener(timeline.listener(name)).build());
        }

        int keys = 50;
        int[] next = new int[keys];
        AtomicInteger written = new AtomicInteger();
        AtomicBoolean writing = new AtomicBoolean(true);
        Thread writer = new Thread(() -> {
            while (writing.get()) {
                try (InMemoryStore.Transaction tx = store.begin()) {
                    for (int j = 0; j < 20; j++) {
                        int k = random.nextInt(keys);
                        tx.write(OutboxMessage.of(topic, "k" + k, Integer.toString(next[k]++)));
                    }
                    tx.commit();
                    written.addAndGet(20);
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // about 10k messages/s
            }
        }, "writer");

        List<Dispatcher> alive = new ArrayList<>(dispatchers);
        try {
            dispatchers.forEach(Dispatcher::start);
            writer.start();
            for (int round = 0; round < 2; round++) {
                Dispatcher leader = awaitLeader(alive, timeline);
                int target = written.get() + 3_000;
                Await.untilOrFail(() -> written.get() >= target, Duration.ofSeconds(30), () -> "writer progress");
                alive.remove(leader);
                long closing = System.nanoTime();
                // close() stops marking and sending first, then drains, and leaves the group last.
                timeline.add(nameOf(leader, dispatchers), LeadershipTimeline.Kind.STOPPED, null);
                leader.close();
                Dispatcher nextLeader = awaitLeader(alive, timeline);
                String nextName = nameOf(nextLeader, dispatchers);
                Await.untilOrFail(() -> timeline.first(closing, e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED
                                && e.who().equals(nextName)) != null, Duration.ofSeconds(5),
                        () -> "the listener heard of " + nextName + "'s leadership");
                LeadershipTimeline.Event acquired = timeline.first(closing,
                        e -> e.kind() == LeadershipTimeline.Kind.ACQUIRED && e.who().equals(nextName));
                System.out.println("take-over after closing a leading dispatcher: "
                        + TimeUnit.NANOSECONDS.toMillis(acquired.nanos() - closing) + " ms (to " + nextName + ")");
            }
            writing.set(false);
            writer.join(10_000);
            Await.untilOrFail(() -> store.size() == 0, Duration.ofSeconds(60),
                    () -> "outbox drained, " + store.size() + " rows left");
        } finally {
            writing.set(false);
            for (Dispatcher d : alive) {
                d.close();
            }
            System.out.println("dispatcher timeline (seed " + seed + "):\n" + timeline);
        }

        List<ConsumerRecord<String, byte[]>> got = KafkaReader.readToEnd(kafka.bootstrapServers(), topic,
                Duration.ofSeconds(30));
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (ConsumerRecord<String, byte[]> r : got) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>())
                    .add(Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8)));
        }
        int duplicates = got.size() - written.get();
        System.out.println("written " + written.get() + ", received " + got.size() + ", duplicates " + duplicates
                + " (seed " + seed + ")");
        for (int k = 0; k < keys; k++) {
            List<Integer> seq = byKey.getOrDefault("k" + k, List.of());
            assertThat(seq).as("key k%d (seed %d)", k, seed).isSorted();
            assertThat(seq.stream().distinct().count()).as("key k%d: every message arrived (seed %d)", k, seed)
                    .isEqualTo(next[k]);
        }
        timeline.assertExclusive();
    }

    private static String nameOf(Dispatcher d, List<Dispatcher> all) {
        return "d" + all.indexOf(d);
    }

    private static Dispatcher awaitLeader(List<Dispatcher> among, LeadershipTimeline timeline) {
        Await.untilOrFail(() -> among.stream().filter(Dispatcher::isLeader).count() == 1, Duration.ofSeconds(30),
                () -> "a leader among the dispatchers\n" + timeline);
        return among.stream().filter(Dispatcher::isLeader).findFirst().orElseThrow();
    }
}
