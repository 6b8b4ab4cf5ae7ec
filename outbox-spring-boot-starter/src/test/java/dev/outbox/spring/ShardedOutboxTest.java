package dev.outbox.spring;

import dev.outbox.testkit.Capabilities;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.spi.Store;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code outbox.store.shards=4} from properties alone: on a new database, Flyway runs the application's migrations
 * first and {@code create-schema} then creates the sharded outbox table; two application contexts share the shards
 * over the Kafka shard-leader group and publish everything; when one closes, the other takes its shards. A store
 * configured for another count than its table's stops start-up with one line naming both.
 */
@ExtendWith(OutputCaptureExtension.class)
class ShardedOutboxTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final int ORDERS = 200;
    private static final int CUSTOMERS = 40;

    @Test
    void twoContextsShareFourShardsAndPublishEverything() {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        String url = postgres.createDatabase("starter_sharded");
        String[] properties = {
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                // The application's own migrations on a new database; the outbox table comes from create-schema.
                "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/migration",
                "outbox.store.shards=4",
                "outbox.store.create-schema=true",
                "outbox.kafka.leader-topic=starter-sharded-leader"};
        ConfigurableApplicationContext first = start(properties);
        ConfigurableApplicationContext second = null;
        try {
            second = start(properties);
            Dispatcher a = dispatcher(first);
            Dispatcher b = dispatcher(second);
            assertThat(Capabilities.sharding(first.getBean(Store.class)).shards()).isEqualTo(4);
            Await.untilOrFail(() -> led(a).size() + led(b).size() == 4 && !led(a).isEmpty() && !led(b).isEmpty(),
                    TIMEOUT, () -> "the two contexts share the 4 shards: first leads " + led(a) + ", second " + led(b));
            assertThat(led(a)).as("shards led by both").doesNotContainAnyElementsOf(led(b));

            JdbcOrders orders = first.getBean(JdbcOrders.class);
            for (int id = 1; id <= ORDERS / 2; id++) {
                orders.place(id, "sharded-" + (id % CUSTOMERS), false);
            }
            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                reader.readUntil(r -> distinct(r) >= ORDERS / 2, TIMEOUT);
            }

            first.close();
            Await.untilOrFail(() -> led(b).size() == 4, TIMEOUT,
                    () -> "the second context took every shard, leads " + led(b));
            JdbcOrders survivor = second.getBean(JdbcOrders.class);
            for (int id = ORDERS / 2 + 1; id <= ORDERS; id++) {
                survivor.place(id, "sharded-" + (id % CUSTOMERS), false);
            }
            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                List<ConsumerRecord<String, String>> got = reader.readUntil(r -> distinct(r) >= ORDERS, TIMEOUT);
                assertThat(distinct(got)).isEqualTo(ORDERS);
            }
            Store store = second.getBean(Store.class);
            Await.untilOrFail(() -> Capabilities.gauges(store).backlog() == 0, TIMEOUT, () -> "outbox purged, backlog " + Capabilities.gauges(store).backlog());
        } finally {
            if (second != null) {
                second.close();
            }
            first.close();
        }
    }

    @Test
    void aStoreForFourShardsOverAnUnshardedTableFailsStartUpNamingBothCounts(CapturedOutput output) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_shard_mismatch");
        List<String> args = new ArrayList<>(List.of(
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "spring.kafka.bootstrap-servers=127.0.0.1:1",
                // The shipped migration creates an unsharded outbox table.
                "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "outbox.store.shards=4",
                "outbox.kafka.leader-topic=starter-shard-mismatch-leader"));
        assertThatThrownBy(() -> start(args.toArray(String[]::new)).close()).isInstanceOf(Exception.class);

        String line = output.getAll().lines().filter(l -> l.startsWith("Outbox configuration property"))
                .findFirst().orElseThrow(() -> new AssertionError("no failure line in:\n" + output.getAll()));
        assertThat(output).contains("APPLICATION FAILED TO START");
        assertThat(line).startsWith("Outbox configuration property 'outbox.store.shards': ")
                .contains("made for 1 shard(s)").contains("configured with 4 shard(s)");
    }

    private static ConfigurableApplicationContext start(String[] properties) {
        return new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .run(Arrays.stream(properties).map(p -> "--" + p).toArray(String[]::new));
    }

    private static Dispatcher dispatcher(ConfigurableApplicationContext context) {
        return context.getBean(OutboxDispatcherLifecycle.class).dispatcher();
    }

    /** The shards this dispatcher leads now. */
    private static Set<Integer> led(Dispatcher d) {
        List<DispatcherHealth> shards = d.shardHealth();
        return IntStream.range(0, shards.size()).filter(i -> shards.get(i).status() == DispatcherHealth.Status.LEADER)
                .boxed().collect(Collectors.toSet());
    }

    private static long distinct(List<ConsumerRecord<String, String>> records) {
        return records.stream().filter(r -> r.key() != null && r.key().startsWith("sharded-"))
                .map(ConsumerRecord::value).distinct().count();
    }
}
