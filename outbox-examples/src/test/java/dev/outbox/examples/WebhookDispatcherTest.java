package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.OutboxMessage;
import dev.outbox.ParkedRecord;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.ReceivedMessage;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The custom broker under the real dispatcher: a Postgres outbox published to a webhook. Every message arrives in
 * per-key order, and one the receiver rejects for good (HTTP 400) is parked without holding up the others.
 */
class WebhookDispatcherTest {

    @Test
    void aDispatcherPublishesThePostgresOutboxToAWebhookAndParksWhatTheReceiverRejects() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        DataSource dataSource = postgres.dataSource(postgres.createDatabase("webhook_dispatcher"));
        PostgresStore store = PostgresStore.builder(dataSource).build();
        store.createSchema();
        Map<String, List<String>> expected = new LinkedHashMap<>();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            List<OutboxMessage> batch = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                String key = "k" + (i % 10);
                batch.add(OutboxMessage.of("orders", key, key + "-" + i));
                expected.computeIfAbsent(key, k -> new ArrayList<>()).add(key + "-" + i);
                if (i == 100) {
                    batch.add(OutboxMessage.of("orders", "status-400", "the receiver refuses this one"));
                }
            }
            store.publisher().publish(c, batch);
            c.commit();
        }

        try (WebhookReceiver receiver = WebhookReceiver.start();
             Dispatcher dispatcher = Dispatcher.builder(store,
                     WebhookMessageBroker.builder(receiver.endpoint()).build()).build()) {
            dispatcher.start();

            List<ReceivedMessage> got = receiver.await("orders", 200, Duration.ofSeconds(60));
            Map<String, List<String>> actual = new LinkedHashMap<>();
            got.forEach(m -> actual.computeIfAbsent(m.key(), k -> new ArrayList<>()).add(m.valueAsString()));
            assertThat(actual).isEqualTo(expected);

            Await.untilOrFail(() -> store.parked(10).size() == 1 && store.backlog() == 0, Duration.ofSeconds(30),
                    () -> "one parked row and an empty outbox: " + store.parked(10) + ", " + store.backlog());
            ParkedRecord parked = store.parked(10).get(0);
            assertThat(parked.key()).isEqualTo("status-400");
            assertThat(parked.reason()).contains("answered 400");
        }
    }
}
