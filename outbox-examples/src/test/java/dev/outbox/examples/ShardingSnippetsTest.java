package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the README's shard-leadership snippet ({@link ShardingSnippets}) on a real Postgres and Kafka: the one
 * dispatcher of the group is given all six shards and publishes what a writer commits.
 */
class ShardingSnippetsTest {

    @Test
    void theOnlyDispatcherOfTheGroupLeadsEveryShardAndPublishes() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("invoices", 3);
        String url = postgres.createDatabase("sharding_snippets");
        DataSource dataSource = postgres.dataSource(url);
        PostgresStore schema = PostgresStore.builder(dataSource).shards(6).build();
        schema.createSchema();
        Properties props = new Properties();
        props.setProperty("bootstrap.servers", kafka.bootstrapServers());
        try (Dispatcher dispatcher = ShardingSnippets.shardedDispatcher(dataSource, props)) {
            dispatcher.start();
            Await.untilOrFail(() -> dispatcher.shardHealth().stream()
                            .allMatch(h -> h.status() == DispatcherHealth.Status.LEADER), Duration.ofSeconds(30),
                    () -> "every shard led: " + dispatcher.shardHealth());
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < 12; i++) {
                    schema.publisher().publish(c, OutboxMessage.of("invoices", "customer-" + i, "issued"));
                }
                c.commit();
            }
            Await.untilOrFail(() -> schema.backlog() == 0, Duration.ofSeconds(30),
                    () -> schema.backlog() + " rows left");
            assertThat(dispatcher.shardHealth()).hasSize(6);
        }
    }
}
