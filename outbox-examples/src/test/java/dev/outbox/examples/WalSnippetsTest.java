package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxMessage;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the README's WAL-harvest snippet ({@link WalSnippets}) against a real Postgres. */
class WalSnippetsTest {

    @Test
    void aWalHarvestedStorePublishesWhatTheWriterCommitted() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("wal_snippets");
        DataSource dataSource = postgres.dataSource(url);
        PostgresStore store = WalSnippets.walStore(dataSource, url, postgres.username(), postgres.password());
        try {
            assertThat(store.harvestsWal()).isTrue();
            InMemoryBroker broker = new InMemoryBroker();
            try (Dispatcher dispatcher = Dispatcher.builder(store, broker).build()) {
                dispatcher.start();
                try (Connection c = dataSource.getConnection()) {
                    c.setAutoCommit(false);
                    store.publisher().publish(c, OutboxMessage.of("orders", "order-1", "paid"));
                    c.commit();
                }
                Await.untilOrFail(() -> broker.deliveredCount() == 1, Duration.ofSeconds(30),
                        () -> "delivered " + broker.deliveredCount());
            }
            assertThat(broker.delivered().get(0).key()).isEqualTo("order-1");
        } finally {
            store.dropSlot();
        }
    }
}
