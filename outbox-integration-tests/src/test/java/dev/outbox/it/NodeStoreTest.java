package dev.outbox.it;

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

    @Test
    void everyMethodOfThePortIsForwarded() {
        List<String> missing = new ArrayList<>();
        for (Method m : Store.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) || m.getDeclaringClass() != Store.class) {
                continue;
            }
            try {
                NodeStore.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
            } catch (NoSuchMethodException e) {
                missing.add(m.getName());
            }
        }
        assertThat(missing).as("methods of Store that NodeStore leaves to the port's defaults").isEmpty();
    }

    @Test
    void fencingReachesTheEngineThroughTheNodeStore() {
        JdbcServer postgres = TestServers.postgres();
        PostgresStore real = PostgresStore.builder(postgres.dataSource(postgres.createDatabase("node_store"))).build();
        real.createSchema();
        NodeStore node = new NodeStore("node-1", real, new SendLog(false));

        assertThat(node.supportsFencing()).as("fencing, on by default in PostgresStore").isTrue();
        long deposed = node.acquireEpoch();
        Store fenced = node.fencedBy(deposed);
        long successor = new NodeStore("node-2", real, new SendLog(false)).acquireEpoch();

        assertThat(successor).isGreaterThan(deposed);
        assertThat(fenced).isInstanceOf(NodeStore.class);
        assertThatThrownBy(() -> fenced.purge(List.of(1L))).as("a deposed leader's purge")
                .isInstanceOf(StoreFencedException.class);
        node.cut();
        assertThatThrownBy(() -> fenced.acquireEpoch()).as("the fenced view shares the node's cut")
                .hasMessageContaining("node-1 has crashed");
    }
}
