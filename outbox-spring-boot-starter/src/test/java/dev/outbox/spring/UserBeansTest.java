package dev.outbox.spring;

import dev.outbox.DispatcherListener;
import dev.outbox.DispatcherObserver;
import dev.outbox.Header;
import dev.outbox.MessageDecorator;
import dev.outbox.OutboxRecord;
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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.StreamSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@link MessageDecorator}, {@link DispatcherListener} and {@link DispatcherObserver} bean of the application
 * is applied, in {@code @Order} (declared here in the reverse order), on a real Postgres and Kafka.
 */
class UserBeansTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final List<String> EVENTS = new CopyOnWriteArrayList<>();

    @Configuration(proxyBeanMethods = false)
    static class Beans {
        @Bean
        @Order(2)
        DispatcherListener secondListener() {
            return listener("second");
        }

        @Bean
        @Order(1)
        DispatcherListener firstListener() {
            return listener("first");
        }

        @Bean
        @Order(2)
        MessageDecorator secondDecorator() {
            return m -> m.withHeader(Header.of("x-order", "second"));
        }

        @Bean
        @Order(1)
        MessageDecorator firstDecorator() {
            return m -> m.withHeader(Header.of("x-order", "first"));
        }

        @Bean
        DispatcherObserver acknowledgements() {
            return new DispatcherObserver() {
                @Override
                public void acknowledged(OutboxRecord record, Duration sendToAck, Duration commitToAck) {
                    EVENTS.add("acknowledged " + record.key());
                }
            };
        }

        private static DispatcherListener listener(String name) {
            return new DispatcherListener() {
                @Override
                public void leaderAcquired(UUID leaderId) {
                    EVENTS.add(name + " leaderAcquired");
                }
            };
        }
    }

    @Test
    void everyListenerObserverAndDecoratorBeanIsAppliedInOrder() {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        String url = postgres.createDatabase("starter_user_beans");
        String[] args = {
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + postgres.username(),
                "--spring.datasource.password=" + postgres.password(),
                "--spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "--spring.flyway.enabled=true",
                "--spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "--outbox.dispatcher.leader-election=false"};
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class, Beans.class)
                .web(WebApplicationType.NONE).run(args)) {
            Await.untilOrFail(() -> EVENTS.contains("second leaderAcquired"), TIMEOUT, () -> "events " + EVENTS);
            assertThat(EVENTS).containsSubsequence("first leaderAcquired", "second leaderAcquired");

            context.getBean(JdbcOrders.class).place(1, "user-beans-1", false);
            Await.untilOrFail(() -> EVENTS.contains("acknowledged user-beans-1"), TIMEOUT, () -> "events " + EVENTS);
            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "orders")) {
                ConsumerRecord<String, String> record = reader.readUntil(
                        r -> r.stream().anyMatch(c -> "user-beans-1".equals(c.key())), TIMEOUT).stream()
                        .filter(c -> "user-beans-1".equals(c.key())).findFirst().orElseThrow();
                List<String> order = StreamSupport.stream(record.headers().headers("x-order").spliterator(), false)
                        .map(h -> new String(h.value(), StandardCharsets.UTF_8)).toList();
                assertThat(order).containsExactly("first", "second");
            }
        }
    }
}
