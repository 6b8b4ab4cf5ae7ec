package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.StorageFencing;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the guide's store decorator ({@link CustomStoreSnippets.CountingStore}) around a real {@code PostgresStore}:
 * the dispatcher harvests and fences through the real store's capabilities, and the decorator counts every purge.
 */
class CustomStoreSnippetsTest {

    @Test
    void aDecoratorThatWrapsOnlyThePurgeKeepsTheRealStoresCapabilities() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        DataSource dataSource = postgres.dataSource(postgres.createDatabase("custom_store_snippets"));
        PostgresStore real = PostgresStore.builder(dataSource).build();
        real.createSchema();
        CustomStoreSnippets.CountingStore store = new CustomStoreSnippets.CountingStore(real);
        assertThat(store.capability(CursorHarvest.class)).isPresent();
        assertThat(store.capability(StorageFencing.class)).as("fencing, on by default").isPresent();

        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            messages.add(OutboxMessage.of("orders", "order-" + (i % 4), ("{\"n\":" + i + "}").getBytes()));
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            store.publisher().publish(c, messages);
            c.commit();
        }
        InMemoryBroker broker = InMemoryBroker.builder().build();
        try (Dispatcher dispatcher = Dispatcher.builder(store, broker).build()) {
            dispatcher.start();
            Await.untilOrFail(() -> store.purged.sum() == 20, Duration.ofSeconds(30),
                    () -> "purged " + store.purged.sum() + " of 20");
        }
        assertThat(broker.delivered()).hasSize(20);
    }
}
