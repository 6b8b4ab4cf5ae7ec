package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Sharded dispatchers on real threads over {@link InMemoryShardedLeaderGroup}: the shards spread over the
 * dispatchers and move when one leaves, one joins and one's session expires, and every record arrives, in order per
 * key. (The deterministic simulation covers the interleavings: {@code SimulationTest}.)
 */
class InMemoryShardedLeaderGroupTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int SHARDS = 6;

    @Test
    void shardsSpreadAndMoveWhenADispatcherLeavesJoinsOrExpiresWithoutLosingOrReorderingARecord() {
        for (DispatcherConfig.Harvest harvest : DispatcherConfig.Harvest.values()) {
            InMemoryStore store = new InMemoryStore();
            store.setShards(SHARDS);
            store.setFencing(true);
            InMemoryBroker broker = new InMemoryBroker();
            InMemoryShardedLeaderGroup group = new InMemoryShardedLeaderGroup(SHARDS);
            List<Dispatcher> dispatchers = new ArrayList<>();
            int batch = 400;
            try {
                for (int i = 0; i < 3; i++) {
                    dispatchers.add(start(store, broker, group, harvest, i));
                }
                Await.untilOrFail(() -> leading(dispatchers.get(0)) == 2 && leading(dispatchers.get(1)) == 2
                        && leading(dispatchers.get(2)) == 2, WAIT, () -> harvest + ": not spread 2/2/2: " + owners(group));
                write(store, 0, batch);

                dispatchers.get(0).close(); // leaves: its shards go to the others
                assertThat(group.shardsOf(0)).isEmpty();
                Await.untilOrFail(() -> leading(dispatchers.get(1)) + leading(dispatchers.get(2)) == SHARDS, WAIT,
                        () -> harvest + ": the leaver's shards did not move: " + owners(group));
                write(store, batch, batch);

                dispatchers.add(start(store, broker, group, harvest, 3)); // joins: takes its share
                Await.untilOrFail(() -> leading(dispatchers.get(3)) == 2, WAIT,
                        () -> harvest + ": the newcomer did not take its share: " + owners(group));
                write(store, 2 * batch, batch);

                assertThat(group.expire(1)).isTrue(); // its shards move at once; it rejoins when it next polls
                write(store, 3 * batch, batch);
                Await.untilOrFail(() -> store.size() == 0 && distinct(broker) == 4 * batch, WAIT,
                        () -> harvest + ": " + store.size() + " rows left, " + distinct(broker) + " distinct delivered");
                Await.untilOrFail(() -> group.size() == 3 && group.shardsOf(1).size() == 2, WAIT,
                        () -> harvest + ": the expired member did not rejoin and take its share: " + owners(group));
            } finally {
                dispatchers.forEach(Dispatcher::close);
            }
            long epochs = 0;
            for (int s = 0; s < SHARDS; s++) {
                epochs += store.epoch(s);
            }
            assertThat(epochs).as("%s: leaderships taken over the shards (one each, plus one per move)", harvest)
                    .isGreaterThanOrEqualTo(SHARDS + 6);
            Map<String, Integer> last = new HashMap<>();
            for (OutboxRecord r : broker.delivered()) {
                int v = Integer.parseInt(new String(r.message().value(), StandardCharsets.UTF_8));
                Integer before = last.put(r.key(), v);
                assertThat(before == null || before <= v).as("%s: key %s sent %d after %d", harvest, r.key(), v,
                        before).isTrue();
            }
        }
    }

    private static Dispatcher start(InMemoryStore store, InMemoryBroker broker, InMemoryShardedLeaderGroup group,
                                    DispatcherConfig.Harvest harvest, int i) {
        Dispatcher d = Dispatcher.builder(store, new dev.outbox.spi.SharedMessageBroker(broker)).leaderTransport(group.newMember())
                .config(DispatcherConfig.builder()
                        .harvest(harvest)
                        .markBatchSize(50)
                        .pollInterval(Duration.ofMillis(10))
                        .heartbeatTimeout(Duration.ofMillis(300))
                        .drainTimeout(Duration.ofSeconds(5))
                        .build())
                .name("sharded-" + i).build();
        d.start();
        return d;
    }

    private static long leading(Dispatcher d) {
        return d.shardHealth().stream().filter(h -> h.status() == DispatcherHealth.Status.LEADER).count();
    }

    /** The shards each member owns, by member. */
    private static List<Set<Integer>> owners(InMemoryShardedLeaderGroup group) {
        List<Set<Integer>> owned = new ArrayList<>();
        for (int m = 0; m < 4; m++) {
            owned.add(group.shardsOf(m));
        }
        return owned;
    }

    private static void write(InMemoryStore store, int from, int n) {
        try (InMemoryStore.Transaction tx = store.begin()) {
            for (int i = from; i < from + n; i++) {
                tx.publish(List.of(OutboxMessage.of("t", "k" + (i % 41), String.valueOf(i))));
            }
            tx.commit();
        }
    }

    private static int distinct(InMemoryBroker broker) {
        Set<String> seen = new HashSet<>();
        for (OutboxRecord r : broker.delivered()) {
            seen.add(new String(r.message().value(), StandardCharsets.UTF_8));
        }
        return seen.size();
    }
}
