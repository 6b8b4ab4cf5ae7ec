package dev.outbox.it;

import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The end-to-end suite and the soak must run the engine as production does: their {@link NodeStore} must not hide
 * what the real store offers. Until 2026-11-27 it did not forward storage fencing or shards, so the suites ran
 * without fencing while every production {@code PostgresStore} fences by default.
 */
class NodeStoreTest {

    /** Every capability a store can have. */
    private static final List<Class<?>> CAPABILITIES = List.of(MarkHarvest.class, CursorHarvest.class,
            CommitSignals.class, StorageFencing.class, Sharding.class, ParkedRecords.class, ParkedKeys.class,
            Gauges.class);

    @Test
    void everyMethodOfThePortAndOfEveryCapabilityIsWrapped() {
        List<String> missing = new ArrayList<>();
        List<Class<?>> types = new ArrayList<>(CAPABILITIES);
        types.add(Store.class);
        for (Class<?> type : types) {
            for (Method m : type.getMethods()) {
                if (Modifier.isStatic(m.getModifiers()) || m.getDeclaringClass() != type) {
                    continue;
                }
                try {
                    NodeStore.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
                } catch (NoSuchMethodException e) {
                    missing.add(type.getSimpleName() + "." + m.getName());
                }
            }
        }
        assertThat(missing).as("methods that NodeStore leaves to defaults, bypassing its cut").isEmpty();
    }

    @Test
    void theNodeStoreHasExactlyTheRealStoresCapabilitiesAndAnswersForThemItself() {
        JdbcServer postgres = TestServers.postgres();
        PostgresStore real = PostgresStore.builder(postgres.dataSource(postgres.createDatabase("node_caps"))).build();
        NodeStore node = new NodeStore("node-1", real, new SendLog(false));
        for (Class<?> type : CAPABILITIES) {
            assertThat(node.capability(type).isPresent()).as(type.getSimpleName())
                    .isEqualTo(real.capability(type).isPresent());
            node.capability(type).ifPresent(c -> assertThat(c).as(type.getSimpleName()).isSameAs(node));
        }
    }

    @Test
    void fencingReachesTheEngineThroughTheNodeStore() {
        JdbcServer postgres = TestServers.postgres();
        PostgresStore real = PostgresStore.builder(postgres.dataSource(postgres.createDatabase("node_store"))).build();
        real.createSchema();
        NodeStore node = new NodeStore("node-1", real, new SendLog(false));

        assertThat(node.capability(StorageFencing.class)).as("fencing, on by default in PostgresStore").isPresent();
        long deposed = node.acquireEpoch();
        Store fenced = node.fencedBy(deposed);
        long successor = new NodeStore("node-2", real, new SendLog(false)).acquireEpoch();

        assertThat(successor).isGreaterThan(deposed);
        assertThat(fenced).isInstanceOf(NodeStore.class);
        assertThatThrownBy(() -> fenced.purge(List.of(1L))).as("a deposed leader's purge")
                .isInstanceOf(StoreFencedException.class);
        node.cut();
        assertThatThrownBy(() -> ((NodeStore) fenced).acquireEpoch()).as("the fenced view shares the node's cut")
                .hasMessageContaining("node-1 has crashed");
    }
}
