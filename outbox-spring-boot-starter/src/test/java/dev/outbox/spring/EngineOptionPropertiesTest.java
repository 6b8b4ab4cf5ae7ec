package dev.outbox.spring;

import dev.outbox.spi.StorageFencing;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.h2.H2Store;
import dev.outbox.store.postgres.WalHarvest;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine options a plain-Java user sets on the builders, as properties: the transactional producer, the headers
 * and the record timestamp ({@code outbox.kafka.*}), storage fencing and the late-commit window
 * ({@code outbox.store.*}), the WAL harvest's settings ({@code outbox.store.wal.*}); each bound and reaching the
 * component it configures, and a bad value stopping start-up naming its property.
 */
class EngineOptionPropertiesTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private static OutboxProperties bind(Map<String, String> properties) {
        return new Binder(new MapConfigurationPropertySource(properties)).bind("outbox", OutboxProperties.class)
                .orElseGet(OutboxProperties::new);
    }

    @Test
    void theWalHarvestsSettingsAreBoundAndApplied() {
        OutboxProperties p = bind(Map.of(
                "outbox.store.wal.url", "jdbc:postgresql://db.example:5432/orders",
                "outbox.store.wal.status-interval", "2s",
                "outbox.store.wal.read-wait", "50ms",
                "outbox.store.wal.max-buffered", "2000",
                "outbox.store.wal.takeover-timeout", "45s",
                "outbox.store.wal.properties.sslmode", "verify-full"));

        WalHarvest wal = OutboxStoreFactory.Postgres.walHarvest("outbox.store.wal", p.getStore().getWal());

        assertThat(wal.statusInterval()).isEqualTo(Duration.ofSeconds(2));
        assertThat(wal.readWait()).isEqualTo(Duration.ofMillis(50));
        assertThat(wal.maxBuffered()).isEqualTo(2000);
        assertThat(wal.takeoverTimeout()).isEqualTo(Duration.ofSeconds(45));
        assertThat(wal.properties().getProperty("sslmode")).isEqualTo("verify-full");
    }

    @Test
    void aBadWalSettingNamesItsProperty() {
        OutboxProperties slow = bind(Map.of("outbox.store.wal.url", "jdbc:postgresql://db.example:5432/orders",
                "outbox.store.wal.status-interval", "2h"));
        assertThatThrownBy(() -> OutboxStoreFactory.Postgres.walHarvest("outbox.store.wal", slow.getStore().getWal()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.wal.status-interval'");
        OutboxProperties waits = bind(Map.of("outbox.store.wal.url", "jdbc:postgresql://db.example:5432/orders",
                "outbox.store.wal.read-wait", "5s"));
        assertThatThrownBy(() -> OutboxStoreFactory.Postgres.walHarvest("outbox.store.wal", waits.getStore().getWal()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.wal.read-wait'");
    }

    @Test
    void fencingAndTheLateCommitWindowReachTheStore() {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:engine_options;DB_CLOSE_DELAY=-1");
        OutboxProperties p = bind(Map.of("outbox.store.fencing", "false", "outbox.store.late-commit-window", "5m"));

        OutboxStoreFactory.Built built = OutboxStoreFactory.build(h2, "outbox.store", p.getStore());

        assertThat(built.store().capability(StorageFencing.class)).as("fencing off").isEmpty();
        assertThat(((H2Store) built.store()).lateCommitWindow()).isEqualTo(Duration.ofMinutes(5));
        OutboxStoreFactory.Built fenced = OutboxStoreFactory.build(h2, "outbox.store", bind(Map.of()).getStore());
        assertThat(fenced.store().capability(StorageFencing.class)).as("fencing on by default").isPresent();
    }

    /** outbox.store.key-sequence turns the per-key sequence on: the store creates the counter table and numbers. */
    @Test
    void theKeySequencePropertyReachesTheStore() throws Exception {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:engine_options_key_seq;DB_CLOSE_DELAY=-1");
        OutboxProperties p = bind(Map.of("outbox.store.key-sequence", "true", "outbox.store.table", "numbered"));

        OutboxStoreFactory.Built built = OutboxStoreFactory.build(h2, "outbox.store", p.getStore());
        built.createSchema().run();
        try (java.sql.Connection c = h2.getConnection()) {
            built.store().publisher().publish(c, List.of(dev.outbox.OutboxMessage.of("orders", "k", "v"),
                    dev.outbox.OutboxMessage.of("orders", "k", "w")));
        }

        assertThat(((H2Store) built.store()).keySequence()).isTrue();
        assertThat(Jdbc.queryLong(h2, "SELECT seq FROM \"numbered_key_seq\" WHERE topic = 'orders'")).isEqualTo(2);
        assertThat(((H2Store) OutboxStoreFactory.build(h2, "outbox.store", bind(Map.of()).getStore()).store())
                .keySequence()).as("off by default").isFalse();
    }

    @Test
    void aLateCommitWindowForPostgresStopsStartUpNamingIt() {
        JdbcServer postgres = TestServers.postgres();
        OutboxProperties p = bind(Map.of("outbox.store.type", "postgres", "outbox.store.late-commit-window", "5m"));

        assertThatThrownBy(() -> OutboxStoreFactory.build(postgres.dataSource(postgres.jdbcUrl(), postgres.username(),
                postgres.password()), "outbox.store",
                p.getStore()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.late-commit-window'");
    }

    @Test
    void theTransactionalProducerAndTheHeaderOptionsReachKafka() {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String topic = "engine-options-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String url = postgres.createDatabase("starter_engine_options");
        String[] args = {
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + postgres.username(),
                "--spring.datasource.password=" + postgres.password(),
                "--spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "--spring.flyway.enabled=true",
                "--spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "--outbox.dispatcher.leader-election=false",
                "--outbox.kafka.transactional-id=engine-options-" + UUID.randomUUID(),
                "--outbox.kafka.message-id-header=x-message-id",
                "--outbox.kafka.created-at-header=x-created-at",
                "--outbox.kafka.record-timestamp=send-time"};
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class)
                .web(WebApplicationType.NONE).run(args)) {
            context.getBean(TransactionTemplate.class).executeWithoutResult(s ->
                    context.getBean(OutboxPublisher.class).publish(topic, "k", "v"));

            try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), topic)) {
                ConsumerRecord<String, String> record = reader.readUntil(r -> !r.isEmpty(), TIMEOUT).get(0);
                assertThat(record.headers().lastHeader("x-message-id")).isNotNull();
                assertThat(record.headers().lastHeader("x-created-at")).isNotNull();
                assertThat(record.headers().lastHeader("outbox-message-id")).isNull();
            }
            // A transaction's commit marker follows the one record: the producer was transactional.
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                    ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"),
                    new StringDeserializer(), new StringDeserializer())) {
                TopicPartition partition = new TopicPartition(topic, 0);
                Await.untilOrFail(() -> consumer.endOffsets(List.of(partition)).get(partition) == 2L, TIMEOUT,
                        () -> "end offset " + consumer.endOffsets(List.of(partition)).get(partition));
            }
        }
    }

    @Test
    void aBadTransactionalIdStopsStartUpNamingIt() {
        OutboxProperties p = bind(Map.of("outbox.kafka.transactional-id", "has space"));

        assertThatThrownBy(() -> OutboxKafkaClients.brokerSettings(
                dev.outbox.broker.kafka.KafkaMessageBroker.builder(), "outbox.kafka", p.getKafka()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.kafka.transactional-id'")
                .hasMessageContaining("'has space'");
    }
}
