package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter with the Postgres WAL harvest ({@code outbox.store.wal.url}): the same contract as the table, on an
 * embedded PostgreSQL ({@code wal_level=logical}) and an in-process Kafka; the schema, functions and slot come from
 * {@code outbox.store.create-schema}. The slot is dropped once the dispatcher is closed.
 */
@SpringBootTest(classes = TestApplication.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresWalOutboxTest extends JdbcOutboxContract {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @Autowired
    OutboxDispatcherLifecycle lifecycle;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_postgres_wal");
        KAFKA.createTopic("orders", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-postgres-wal-leader");
        registry.add("outbox.store.create-schema", () -> "true");
        registry.add("outbox.store.wal.url", () -> url);
        registry.add("outbox.store.wal.username", postgres::username);
        registry.add("outbox.store.wal.password", postgres::password);
        registry.add("spring.flyway.enabled", () -> "true");
        registry.add("spring.flyway.locations", () -> "classpath:db/migration");
        // The outbox's schema may be created (create-schema) before Flyway runs: the application's own migrations
        // still apply from version 1.
        registry.add("spring.flyway.baseline-on-migrate", () -> "true");
        registry.add("spring.flyway.baseline-version", () -> "0");
    }

    @Override
    String bootstrapServers() {
        return KAFKA.bootstrapServers();
    }

    @Test
    void theStoreHarvestsTheWriteAheadLog() {
        assertThat(store).isInstanceOfSatisfying(PostgresStore.class, s -> {
            assertThat(s.harvestsWal()).isTrue();
            assertThat(s.slot()).isEqualTo("starter_postgres_wal_outbox_slot");
        });
    }

    @AfterAll
    void dropTheSlot() {
        PostgresStore s = (PostgresStore) store;
        lifecycle.dispatcher().close(); // lets its stream go (the context's own stop later closes it again: a no-op)
        s.dropSlot();
    }
}
