package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter on an embedded PostgreSQL and an in-process Kafka: the store type is detected from the JDBC
 * metadata, the outbox tables come from the shipped Flyway migration (with the application's own).
 */
@SpringBootTest(classes = TestApplication.class)
class PostgresOutboxTest extends JdbcOutboxContract {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @Autowired
    OutboxProperties properties;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("starter_postgres");
        KAFKA.createTopic("orders", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", postgres::username);
        registry.add("spring.datasource.password", postgres::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-postgres-leader");
        registry.add("outbox.dispatcher.max-in-flight-bytes", () -> "48MB");
        registry.add("outbox.dispatcher.superseded-parked", () -> "keep");
        registry.add("spring.flyway.enabled", () -> "true");
        // the versioned migrations, with the inbox's and the WAL functions' (their placeholders from the starter)
        registry.add("spring.flyway.locations", () -> "classpath:db/migration,"
                + "classpath:dev/outbox/migrations/versioned/postgresql,"
                + "classpath:dev/outbox/migrations/versioned/postgresql-inbox,"
                + "classpath:dev/outbox/migrations/versioned/postgresql-wal");
    }

    @Override
    String bootstrapServers() {
        return KAFKA.bootstrapServers();
    }

    @Test
    void theVersionedMigrationsRanWithTheStartersPlaceholders() {
        assertThat(jdbc.queryForObject("SELECT count(*) FROM flyway_schema_history WHERE version LIKE '0.%'",
                Long.class)).isEqualTo(7);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM inbox", Long.class)).isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM inbox_failed", Long.class)).isZero();
        assertThat(jdbc.queryForObject("SELECT prosrc FROM pg_proc WHERE proname = 'outbox_emit'", String.class))
                .contains("'dev.outbox:outbox'");
    }

    @Test
    void theStoreWasDetectedAsPostgres() {
        assertThat(store).isInstanceOf(PostgresStore.class);
    }

    @Test
    void maxInFlightBytesIsADataSize() {
        assertThat(properties.getDispatcher().toConfig("outbox.dispatcher").maxInFlightBytes())
                .isEqualTo(48L << 20);
    }

    @Test
    void supersededParkedBindsInLowerCase() {
        assertThat(properties.getDispatcher().toConfig("outbox.dispatcher").supersededParked())
                .isEqualTo(dev.outbox.DispatcherConfig.SupersededParked.KEEP);
    }
}
