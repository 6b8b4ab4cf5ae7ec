package dev.outbox.broker.kafka;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryStore;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sharded outbox (an {@link InMemoryStore} of six shards, with storage fencing) harvested into the real Kafka by
 * three {@code ShardedDispatcher}s whose shard leadership runs over {@link KafkaShardedLeaderTransport}, while a
 * writer keeps committing over many keys: each dispatcher leads some shards; one is closed mid-stream and its shards
 * move to the others; a fourth joins and takes some. A sampler checks all along that no shard is led by two
 * dispatchers at once. Every message must arrive, each key's sequence must never go backwards, and no write may be
 * refused as fenced (every move was an orderly hand-over).
 */
class KafkaShardedDispatcherTest {
    private static final int SHARDS = 6;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder().pollInterval(Duration.ofMillis(100))
            .heartbeatTimeout(Duration.ofSeconds(1)).drainTimeout(Duration.ofSeconds(3))
            .ioErrorBackoff(Duration.ofMillis(50)).maxIoErrorBackoff(Duration.ofMillis(500)).build();

    private static Dispatcher dispatcher(InMemoryStore store, KafkaServer kafka, String leaderTopic, String name) {
        KafkaMessageBroker broker = KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .deliveryTimeout(Duration.ofSeconds(2)).property("client.id", leaderTopic + "-" + name).build();
        KafkaShardedLeaderTransport transport = KafkaShardedLeaderTransport.builder()
                .bootstrapServers(kafka.bootstrapServers()).topic(leaderTopic).shards(SHARDS)
                .dispatcherConfig(CONFIG).deliveryTimeoutOf(broker)
                .consumerProperty("session.timeout.ms", 6_000)
                .consumerProperty("client.id", leaderTopic + "-" + name + "-leader").build();
        return Dispatcher.builder(store, broker).leaderTransport(transport).config(CONFIG).name(name).build();
    }

    private static List<Integer> led(Dispatcher d) {
        List<Integer> out = new ArrayList<>();
        List<DispatcherHealth> health = d.shardHealth();
        for (int s = 0; s < health.size(); s++) {
            if (health.get(s).status() == DispatcherHealth.Status.LEADER) {
                out.add(s);
            }
        }
        return out;
    }

    /** Whether every live dispatcher leads at least one shard and every shard has exactly one leader. */
    private static boolean spread(List<Dispatcher> live) {
        int total = 0;
        boolean[] seen = new boolean[SHARDS];
        for (Dispatcher d : live) {
            List<Integer> mine = led(d);
            if (mine.isEmpty()) {
                return false;
            }
            for (int s : mine) {
                if (seen[s]) {
                    return false;
                }
                seen[s] = true;
                total++;
            }
        }
        return total == SHARDS;
    }

    private static String describe(List<Dispatcher> live) {
        StringBuilder b = new StringBuilder();
        for (Dispatcher d : live) {
            b.append(d).append(" leads ").append(led(d)).append("; ");
        }
        return b.toString();
    }

    @Test
    void shardsSpreadMoveOnCloseAndJoinWithoutLossOrReordering() throws Exception {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        KafkaServer kafka = TestServers.kafka();
        String topic = "sharded-" + UUID.randomUUID();
        String leaderTopic = topic + "-leader";
        kafka.createTopic(topic, 4);
        InMemoryStore store = new InMemoryStore();
        store.setShards(SHARDS);
        store.setFencing(true);

        int keys = 60;
        int[] next = new int[keys];
        AtomicInteger written = new AtomicInteger();
        AtomicBoolean writing = new AtomicBoolean(true);
        Thread writer = new Thread(() -> {
            while (writing.get()) {
                if (store.size() > 1_000) { // keep the backlog small: the test is about moves, not throughput
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
                    continue;
                }
                try (InMemoryStore.Transaction tx = store.begin()) {
                    for (int j = 0; j < 20; j++) {
                        int k = random.nextInt(keys);
                        tx.write(OutboxMessage.of(topic, "k" + k, Integer.toString(next[k]++)));
                    }
                    tx.commit();
                    written.addAndGet(20);
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
            }
        }, "writer");

        List<Dispatcher> live = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            live.add(dispatcher(store, kafka, leaderTopic, "d" + i));
        }
        List<Dispatcher> all = new CopyOnWriteArrayList<>(live);
        // Samples who leads what: a shard led by two dispatchers at once is a G3 violation. A shard counts as led
        // by two only if the first still led it after the second was read (so a move between the reads is none).
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicReference<String> overlap = new AtomicReference<>();
        Thread sampler = new Thread(() -> {
            while (sampling.get()) {
                List<Dispatcher> now = List.copyOf(all);
                List<List<Integer>> first = now.stream().map(KafkaShardedDispatcherTest::led).toList();
                List<List<Integer>> again = now.stream().map(KafkaShardedDispatcherTest::led).toList();
                for (int i = 0; i < now.size(); i++) {
                    for (int j = i + 1; j < now.size(); j++) {
                        for (int s : first.get(i)) {
                            if (first.get(j).contains(s) && again.get(i).contains(s)) {
                                overlap.compareAndSet(null, "shard " + s + " led by " + now.get(i) + " and "
                                        + now.get(j) + ": " + first);
                            }
                        }
                    }
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }, "sampler");
        StringBuilder story = new StringBuilder();
        try {
            live.forEach(Dispatcher::start);
            sampler.start();
            writer.start();
            Await.untilOrFail(() -> spread(live), WAIT, () -> "six shards over three dispatchers: " + describe(live));
            story.append("spread: ").append(describe(live));
            int target = written.get() + 1_500;
            Await.untilOrFail(() -> written.get() >= target, WAIT, () -> "writer progress");

            Dispatcher closing = live.remove(1);
            List<Integer> itsShards = led(closing);
            long closeStart = System.nanoTime();
            closing.close();
            Await.untilOrFail(() -> spread(live), WAIT, () -> "six shards over two dispatchers: " + describe(live));
            story.append(String.format("%nclosed %s, its shards %s moved in %d ms: %s", closing, itsShards,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closeStart), describe(live)));

            int target2 = written.get() + 1_500;
            Await.untilOrFail(() -> written.get() >= target2, WAIT, () -> "writer progress");
            Dispatcher joining = dispatcher(store, kafka, leaderTopic, "d3");
            all.add(joining);
            live.add(joining);
            long joinStart = System.nanoTime();
            joining.start();
            Await.untilOrFail(() -> spread(live), WAIT, () -> "six shards over three dispatchers: " + describe(live));
            story.append(String.format("%n%s joined and took %s in %d ms: %s", joining, led(joining),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - joinStart), describe(live)));
            int target3 = written.get() + 1_000;
            Await.untilOrFail(() -> written.get() >= target3, WAIT, () -> "writer progress");

            writing.set(false);
            writer.join(10_000);
            int backlog = store.size();
            long drainStart = System.nanoTime();
            Await.untilOrFail(() -> store.size() == 0, WAIT, () -> "outbox drained, " + store.size() + " rows left; "
                    + describe(live));
            story.append(String.format("%nthe writer stopped with %d rows in the outbox, drained in %d ms", backlog,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - drainStart)));
        } finally {
            writing.set(false);
            sampling.set(false);
            sampler.join(5_000);
            for (Dispatcher d : live) {
                d.close();
            }
            System.out.println("sharded dispatchers over Kafka (seed " + seed + "): " + story);
        }

        List<ConsumerRecord<String, byte[]>> got = KafkaReader.readToEnd(kafka.bootstrapServers(), topic, WAIT);
        Map<String, List<Integer>> byKey = new HashMap<>();
        for (ConsumerRecord<String, byte[]> r : got) {
            byKey.computeIfAbsent(r.key(), k -> new ArrayList<>())
                    .add(Integer.parseInt(new String(r.value(), StandardCharsets.UTF_8)));
        }
        System.out.println("written " + written.get() + ", received " + got.size() + ", duplicates "
                + (got.size() - written.get()) + ", writes refused as fenced " + store.fencedWrites() + " (seed "
                + seed + ")");
        assertThat(overlap.get()).as("a shard led by two dispatchers at once (seed %d)", seed).isNull();
        for (int k = 0; k < keys; k++) {
            List<Integer> seq = byKey.getOrDefault("k" + k, List.of());
            assertThat(seq).as("key k%d (seed %d)", k, seed).isSorted();
            assertThat(seq.stream().distinct().count()).as("key k%d: every message arrived (seed %d)", k, seed)
                    .isEqualTo(next[k]);
        }
        for (int s = 0; s < SHARDS; s++) {
            assertThat(store.epoch(s)).as("shard %d was led", s).isPositive();
        }
        assertThat(store.fencedWrites()).as("writes refused as fenced: every move was orderly").isZero();
    }
}
