package dev.outbox.testkit;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.OutboxShards;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A sharded outbox harvested by one dispatcher that leads every shard, over the in-memory fakes. */
class ShardedDispatcherTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    private static DispatcherConfig config(DispatcherConfig.Harvest harvest) {
        return DispatcherConfig.builder()
                .harvest(harvest)
                .markBatchSize(50)
                .pollInterval(Duration.ofMillis(10))
                .heartbeatTimeout(Duration.ofSeconds(2))
                .drainTimeout(Duration.ofSeconds(5))
                .build();
    }

    @Test
    void theShardFunctionIsTheDocumentedOne() {
        // md5("a") = 0cc175b9...: 0x0cc175b9 = 214005177; 214005177 mod 6 = 3
        assertThat(OutboxShards.shardOf("a", 6)).isEqualTo((int) (0x0cc175b9L % 6));
        assertThat(OutboxShards.shardOf("anything", 1)).isZero();
        assertThatThrownBy(() -> OutboxShards.shardOf("a", 0)).hasMessageContaining(": 0");
        assertThatThrownBy(() -> OutboxShards.shardOf("a", OutboxShards.MAX_SHARDS + 1))
                .hasMessageContaining(String.valueOf(OutboxShards.MAX_SHARDS + 1));
    }

    @Test
    void everyShardIsHarvestedInKeyOrderByOneDispatcherWithoutATransport() {
        for (DispatcherConfig.Harvest harvest : DispatcherConfig.Harvest.values()) {
            InMemoryStore store = new InMemoryStore();
            store.setShards(4);
            store.setFencing(true);
            InMemoryBroker broker = new InMemoryBroker();
            int n = 2_000;
            try (Dispatcher d = Dispatcher.builder(store, broker).config(config(harvest)).name("sharded").build()) {
                d.start();
                try (InMemoryStore.Transaction tx = store.begin()) {
                    for (int i = 0; i < n; i++) {
                        tx.publish(List.of(OutboxMessage.of("t", "k" + (i % 37), String.valueOf(i))));
                    }
                    tx.commit();
                }
                Await.untilOrFail(() -> store.size() == 0 && broker.deliveredCount() >= n, WAIT,
                        () -> harvest + ": " + store.size() + " rows left, " + broker.deliveredCount() + " delivered");
                assertThat(d.shardHealth()).hasSize(4)
                        .allSatisfy(h -> assertThat(h.status()).isEqualTo(DispatcherHealth.Status.LEADER));
                assertThat(d.health().status()).isEqualTo(DispatcherHealth.Status.LEADER);
                for (int s = 0; s < 4; s++) {
                    // at least one leadership each; a fence under load and a new lease take another epoch
                    assertThat(store.epoch(s)).as("shard %d's epoch", s).isPositive();
                }
            }
            Map<String, Integer> last = new HashMap<>();
            Set<String> seen = new HashSet<>();
            for (OutboxRecord r : broker.delivered()) {
                int v = Integer.parseInt(new String(r.message().value(), StandardCharsets.UTF_8));
                Integer before = last.put(r.key(), v);
                assertThat(before == null || before < v).as("%s: key %s sent %d after %d", harvest, r.key(), v,
                        before).isTrue();
                seen.add(r.key() + "/" + v);
            }
            assertThat(seen).hasSize(n);
        }
    }

    @Test
    void aTransportThatCannotStartClosesTheDispatcherAndAwaitSaysWhy() throws Exception {
        InMemoryStore store = new InMemoryStore();
        store.setShards(2);
        dev.outbox.spi.ShardedLeaderTransport refusing = new dev.outbox.spi.ShardedLeaderTransport() {
            @Override
            public int shards() {
                return 2;
            }

            @Override
            public void start(Listener listener) {
                throw new IllegalStateException("leader topic has 3 partition(s) but 2 shard(s) are configured");
            }

            @Override
            public void poll(Duration timeout) {
            }

            @Override
            public void publish(int shard, dev.outbox.spi.Heartbeat heartbeat) {
            }

            @Override
            public void close() {
            }
        };
        Dispatcher d = Dispatcher.builder(store, new InMemoryBroker()).leaderTransport(refusing).config(
                config(DispatcherConfig.Harvest.CURSOR)).build();
        d.start();
        assertThatThrownBy(d::await).hasMessageContaining("shard leader transport failed")
                .cause().hasMessageContaining("3 partition(s) but 2 shard(s)");
        assertThat(d.state()).isEqualTo(Dispatcher.State.CLOSED);
    }

    @Test
    void aShardedStoreRefusesAnUnshardedTransport() {
        InMemoryStore store = new InMemoryStore();
        store.setShards(3);
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        assertThatThrownBy(() -> Dispatcher.builder(store, new InMemoryBroker()).leaderTransport(group.newMember())
                .build()).hasMessageContaining("3 shards");
    }
}
