package dev.outbox.spring;

import dev.outbox.testkit.Capabilities;

import dev.outbox.spi.Store;
import dev.outbox.spring.app.JpaOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The outbox inside JPA transactions: Hibernate with Spring Boot's JpaTransactionManager, on an embedded
 * PostgreSQL; the outbox tables are created at start-up ({@code outbox.store.create-schema=true}).
 */
@SpringBootTest(classes = TestApplication.class, properties = {
        "spring.autoconfigure.exclude=",
        "spring.jpa.hibernate.ddl-auto=create",
        "outbox.store.create-schema=true",
        "outbox.store.table=jpa_outbox"})
@Import(JpaOrders.class)
class JpaOutboxTest {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @Autowired
    JpaOrders orders;
    @Autowired
    Store store;
    @Autowired
    PlatformTransactionManager transactionManager;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_jpa");
        KAFKA.createTopic("orders", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-jpa-leader");
    }

    @Test
    void aCommittedJpaTransactionPublishesItsMessageAndARolledBackOneNothing() {
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);

        orders.place(101, "jpa-customer", false);
        assertThatThrownBy(() -> orders.place(102, "jpa-customer", true)).isInstanceOf(IllegalStateException.class);
        orders.place(103, "jpa-customer", false);

        assertThat(orders.count()).isEqualTo(2);
        try (TopicReader reader = new TopicReader(KAFKA.bootstrapServers(), "orders")) {
            List<ConsumerRecord<String, String>> got = reader.readUntil(
                    r -> r.stream().anyMatch(c -> c.value().contains("\"orderId\":103")), Duration.ofSeconds(60));
            assertThat(got).filteredOn(c -> c.key().equals("jpa-customer")).extracting(ConsumerRecord::value)
                    .containsExactly("{\"orderId\":101,\"customer\":\"jpa-customer\"}",
                            "{\"orderId\":103,\"customer\":\"jpa-customer\"}");
        }
        Await.untilOrFail(() -> Capabilities.gauges(store).backlog() == 0, Duration.ofSeconds(60), () -> "outbox purged");
    }
}
