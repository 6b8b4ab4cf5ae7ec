package dev.outbox.spring.modulith;

import dev.outbox.spi.Store;
import dev.outbox.spring.modulith.app.ModulithTestApplication;
import dev.outbox.spring.modulith.app.orders.Orders;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Spring Modulith application on a real PostgreSQL and Kafka, its {@code @Externalized} event handed to the outbox
 * ({@code spring.modulith.events.externalization.mode=outbox}): written in the publishing transaction (a rolled-back
 * one publishes nothing) and published by the outbox's dispatcher, in order per Modulith routing key.
 */
@SpringBootTest(classes = ModulithTestApplication.class)
class ModulithOutboxTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final Pattern ORDER = Pattern.compile("\"order\":(\\d+)");
    private static final KafkaServer KAFKA = TestServers.kafka();

    @Autowired
    Orders orders;
    @Autowired
    Store store;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("modulith_outbox");
        KAFKA.createTopic("modulith-orders", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "modulith-outbox-leader");
    }

    @Test
    void externalizedEventsOfCommittedTransactionsArePublishedInOrderPerKeyAndRolledBackOnesNever() {
        int count = 90;
        Set<Long> committed = new HashSet<>();
        for (long order = 1; order <= count; order++) {
            String customer = "customer-" + (order % 3);
            boolean fail = order % 7 == 0;
            if (fail) {
                long o = order;
                assertThatThrownBy(() -> orders.place(customer, o, true)).isInstanceOf(IllegalStateException.class);
            } else {
                orders.place(customer, order, false);
                committed.add(order);
            }
        }

        Map<String, List<Long>> perKey = read(committed);
        Set<Long> published = new HashSet<>();
        perKey.values().forEach(published::addAll);
        assertThat(published).as("published orders: every committed one, no rolled-back one")
                .isEqualTo(committed);
        perKey.forEach((customer, seen) -> {
            assertThat(seen).as("orders of %s as consumed", customer).isSorted();
            assertThat(seen).allSatisfy(o -> assertThat("customer-" + (o % 3)).isEqualTo(customer));
        });
        Await.untilOrFail(() -> store.backlog() == 0, TIMEOUT, () -> "outbox not purged");
    }

    /** Orders per key as consumed from the topic, until every committed one arrived. */
    private static Map<String, List<Long>> read(Set<Long> expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "modulith-test-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Map<String, List<Long>> perKey = new LinkedHashMap<>();
        Set<Long> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
                new StringDeserializer())) {
            consumer.subscribe(List.of("modulith-orders"));
            Await.untilOrFail(() -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    Matcher m = ORDER.matcher(r.value());
                    if (m.find()) {
                        long order = Long.parseLong(m.group(1));
                        perKey.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(order);
                        seen.add(order);
                    }
                }
                return seen.containsAll(expected);
            }, TIMEOUT, () -> "consumed " + seen.size() + " of " + expected.size() + " orders");
        }
        return perKey;
    }
}
