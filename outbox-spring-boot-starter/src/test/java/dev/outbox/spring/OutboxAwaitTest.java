package dev.outbox.spring;

import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link OutboxAwait} on a real Postgres and Kafka: it returns once Kafka has everything, and explains a timeout. */
class OutboxAwaitTest {
    private static final int ORDERS = 50;

    private static ConfigurableApplicationContext start(String database, String... more) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase(database);
        List<String> args = new java.util.ArrayList<>(List.of(
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + postgres.username(),
                "--spring.datasource.password=" + postgres.password(),
                "--spring.flyway.enabled=true",
                "--spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql"));
        for (String m : more) {
            args.add("--" + m);
        }
        return new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .run(args.toArray(String[]::new));
    }

    @Test
    void returnsOnceEverythingCommittedBeforeTheCallIsInKafka() {
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        try (ConfigurableApplicationContext context = start("starter_await",
                "spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "outbox.dispatcher.leader-election=false")) {
            JdbcOrders orders = context.getBean(JdbcOrders.class);
            for (int id = 1; id <= ORDERS; id++) {
                orders.place(id, "await-" + (id % 5), false);
            }

            OutboxAwait.of(context).untilPublished(Duration.ofSeconds(60));

            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                // Everything is there already: the reader only collects it.
                List<ConsumerRecord<String, String>> got = reader.readUntil(r -> awaitKeys(r).size() >= ORDERS,
                        Duration.ofSeconds(30));
                assertThat(awaitKeys(got)).hasSize(ORDERS);
            }
        }
    }

    @Test
    void aTimeoutNamesWhatIsLeftAndWhy() {
        try (ConfigurableApplicationContext context = start("starter_await_timeout",
                "outbox.dispatcher.enabled=false")) {
            context.getBean(JdbcOrders.class).place(1, "await-timeout", false);

            assertThatThrownBy(() -> OutboxAwait.of(context).untilPublished(Duration.ofMillis(300)))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageContaining("not published within PT0.3S: 1 outbox record(s) of")
                    .hasMessageContaining("the oldest id ")
                    .hasMessageContaining(" (topic orders, 0 failed attempt(s))")
                    .hasMessageContaining("no dispatcher runs in this application context");
        }
    }

    private static Set<String> awaitKeys(List<ConsumerRecord<String, String>> records) {
        return records.stream().filter(r -> r.key() != null && r.key().startsWith("await-")
                && !r.key().equals("await-timeout")).map(ConsumerRecord::value).collect(Collectors.toSet());
    }
}
