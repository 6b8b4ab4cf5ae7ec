package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.h2.H2Store;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter on an embedded H2 (an in-memory database, as a local profile or a test has it) and an in-process
 * Kafka: the store type is detected from the JDBC metadata, the outbox tables come from
 * {@code outbox.store.create-schema}, and the orders and their messages commit and roll back together.
 */
@SpringBootTest(classes = TestApplication.class)
class H2OutboxTest extends JdbcOutboxContract {
    private static final KafkaServer KAFKA = TestServers.kafka();
    private static final String URL = "jdbc:h2:mem:starter_h2;DB_CLOSE_DELAY=-1";

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL(URL);
        h2.setUser("sa");
        Jdbc.execute(h2, "CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, customer VARCHAR(100) NOT NULL)");
        KAFKA.createTopic("orders", 3);
        registry.add("spring.datasource.url", () -> URL);
        registry.add("spring.datasource.username", () -> "sa");
        registry.add("spring.datasource.password", () -> "");
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-h2-leader");
        registry.add("outbox.store.create-schema", () -> "true");
    }

    @Override
    String bootstrapServers() {
        return KAFKA.bootstrapServers();
    }

    @Test
    void theStoreWasDetectedAsH2() {
        assertThat(store).isInstanceOf(H2Store.class);
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM \"outbox_parked\"", Long.class)).isZero();
    }
}
