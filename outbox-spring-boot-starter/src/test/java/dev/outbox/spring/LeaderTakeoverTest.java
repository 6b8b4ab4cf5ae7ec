package dev.outbox.spring;

import dev.outbox.testkit.Capabilities;

import dev.outbox.Dispatcher;
import dev.outbox.spi.Store;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two instances of one application on one outbox (two Spring application contexts in this JVM, same database,
 * same leader topic): one leads; closing its context drains it and the other takes over while orders keep
 * being committed, with nothing lost and every customer's events in order.
 */
class LeaderTakeoverTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(90);
    private static final Pattern ORDER_ID = Pattern.compile("\"orderId\":(\\d+)");
    private static final int ORDERS = 300;
    private static final int CUSTOMERS = 10;

    @Test
    void twoContextsElectOneLeaderAndTheOtherTakesOverWhenItsContextCloses() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        String url = postgres.createDatabase("starter_takeover");
        String[] properties = {
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "outbox.kafka.leader-topic=starter-takeover-leader"};
        ConfigurableApplicationContext first = start(properties);
        ConfigurableApplicationContext second = start(properties);
        try {
            Dispatcher a = dispatcher(first);
            Dispatcher b = dispatcher(second);
            Await.untilOrFail(() -> a.isLeader() || b.isLeader(), TIMEOUT, () -> "a leader elected");
            assertThat(a.isLeader() && b.isLeader()).as("both lead").isFalse();
            ConfigurableApplicationContext leader = a.isLeader() ? first : second;
            ConfigurableApplicationContext standby = leader == first ? second : first;
            Dispatcher survivor = dispatcher(standby);

            JdbcOrders orders = standby.getBean(JdbcOrders.class);
            AtomicInteger written = new AtomicInteger();
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                for (int id = 1; id <= ORDERS; id++) {
                    orders.place(id, "takeover-" + (id % CUSTOMERS), false);
                    written.set(id);
                }
            });
            Await.untilOrFail(() -> written.get() >= ORDERS / 3 || writer.isDone(), TIMEOUT,
                    () -> "a third of the orders written");
            assertThat(writer.isCompletedExceptionally()).as("the writer failed").isFalse();
            Dispatcher closing = dispatcher(leader);
            leader.close();
            assertThat(closing.state()).isEqualTo(Dispatcher.State.CLOSED);
            assertThat(closing.inFlightRecords()).as("in flight after the drain").isZero();

            Await.untilOrFail(survivor::isLeader, TIMEOUT, () -> "the standby took over");
            writer.get();

            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                List<ConsumerRecord<String, String>> got = reader.readUntil(
                        r -> ids(r).values().stream().mapToInt(List::size).sum() >= ORDERS
                                && distinct(ids(r)) == ORDERS, TIMEOUT);
                Map<String, List<Integer>> perKey = ids(got);
                assertThat(distinct(perKey)).as("distinct orders published").isEqualTo(ORDERS);
                // Per key, what a consumer sees never goes backwards (a retry may repeat the latest id, nothing older).
                perKey.forEach((key, seen) -> assertThat(seen).as("order ids of %s as consumed", key).isSorted());
            }
            Store store = standby.getBean(Store.class);
            Await.untilOrFail(() -> Capabilities.gauges(store).backlog() == 0, TIMEOUT, () -> "outbox purged by the new leader");
        } finally {
            second.close();
            first.close();
        }
    }

    private static ConfigurableApplicationContext start(String[] properties) {
        // As command-line arguments: they win over application.properties (builder properties would not).
        return new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .run(Arrays.stream(properties).map(p -> "--" + p).toArray(String[]::new));
    }

    private static Dispatcher dispatcher(ConfigurableApplicationContext context) {
        return context.getBean(OutboxDispatcherLifecycle.class).dispatcher();
    }

    /** Order ids per key of this test's records, in the order they arrived (repeats kept). */
    private static Map<String, List<Integer>> ids(List<ConsumerRecord<String, String>> records) {
        Map<String, List<Integer>> perKey = new LinkedHashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            if (r.key() == null || !r.key().startsWith("takeover-")) {
                continue;
            }
            Matcher m = ORDER_ID.matcher(r.value());
            if (m.find()) {
                perKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(m.group(1)));
            }
        }
        return perKey;
    }

    private static long distinct(Map<String, List<Integer>> perKey) {
        return perKey.values().stream().flatMap(List::stream).distinct().count();
    }
}
