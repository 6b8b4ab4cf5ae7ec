package dev.outbox.spring;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Bad configurations stop start-up, and Spring Boot's failure report ("APPLICATION FAILED TO START") names the
 * property to fix. Each case starts the real application against a real PostgreSQL; none gets as far as Kafka.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupFailureTest {
    private static String url;
    private static JdbcServer postgres;

    @BeforeAll
    static void database() {
        postgres = TestServers.postgres();
        url = postgres.createDatabase("starter_failures");
    }

    /** Starts the test application with the data source and {@code properties}; expects it to fail. */
    private static void startFails(String... properties) {
        List<String> all = new ArrayList<>(List.of(
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "outbox.kafka.leader-topic=starter-failures-leader"));
        all.addAll(List.of(properties));
        assertThatThrownBy(() -> new SpringApplicationBuilder(TestApplication.class)
                .web(WebApplicationType.NONE).run(all.stream().map(p -> "--" + p).toArray(String[]::new)).close())
                .isInstanceOf(Exception.class);
    }

    @Test
    void aMissingBootstrapServerNamesSpringKafkaBootstrapServers(CapturedOutput output) {
        startFails("outbox.broker=kafka");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'spring.kafka.bootstrap-servers': not set");
    }

    @Test
    void aZeroMaxInFlightBytesNamesItsProperty(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.dispatcher.max-in-flight-bytes=0B");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.dispatcher.max-in-flight-bytes': '0B' is not valid")
                .contains("maxInFlightBytes must be at least 1 byte, was 0");
    }

    @Test
    void anUnknownLeaderElectionNamesItsPropertyAndTheChoices(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.dispatcher.leader-election=zookeeper");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.dispatcher.leader-election': is 'zookeeper'; it"
                        + " takes kafka, database or none");
    }

    @Test
    void anUnknownStoreTypeNamesOutboxStoreType(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.store.type=oracle");

        assertThat(output).contains("APPLICATION FAILED TO START").contains("outbox.store.type")
                .contains("oracle");
    }

    @Test
    void aTableNameThatFailsValidationNamesOutboxStoreTable(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.store.table=Orders-Outbox");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.store.table': 'Orders-Outbox' is not valid");
    }

    @Test
    void aShardCountOutOfRangeNamesOutboxStoreShards(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.store.shards=0");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.store.shards': '0' is not valid")
                .contains("shard count must be between 1 and 256: 0");
    }

    @Test
    void aShardedWalHarvestNamesOutboxStoreShards(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.store.shards=4",
                "outbox.store.wal.url=" + url);

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.store.shards': is 4, but the WAL harvest");
    }

    @Test
    void acksZeroNamesSpringKafkaProducerAcks(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "spring.kafka.producer.acks=0");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'spring.kafka.producer.acks'")
                .contains("must be 'all', was '0'");
    }

    @Test
    void anIdempotenceOffInSpringKafkaPropertiesNamesThatProperty(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1",
                "spring.kafka.producer.properties[enable.idempotence]=false");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'spring.kafka.producer.properties[enable.idempotence]'");
    }

    @Test
    void aMisspeltOutboxKeyNamesItAndTheNearestKnownKey(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.dispatcher.max-atempts=3");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.dispatcher.max-atempts': is not a property of the"
                        + " outbox starter (set in commandLineArgs); did you mean 'outbox.dispatcher.max-attempts'?");
    }

    @Test
    void aMisspeltSectionInCamelCaseNamesTheNearestKnownKey(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.dispacher.maxAttempts=3");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("'outbox.dispacher.maxAttempts': is not a property")
                .contains("did you mean 'outbox.dispatcher'?");
    }

    @Test
    void knownKeysInAnyFormAndProducerPropertiesPassTheKeyCheck() {
        org.springframework.core.env.StandardEnvironment env = new org.springframework.core.env.StandardEnvironment();
        env.getPropertySources().addFirst(new org.springframework.core.env.MapPropertySource("test", java.util.Map.of(
                "outbox.dispatcher.maxAttempts", "3",
                "outbox.dispatcher.max-in-flight-bytes", "1MB",
                "outbox.store.wal.takeover-timeout", "5s",
                "outbox.kafka.producer-properties[linger.ms]", "5",
                "outbox.kafka.producer-properties.compression.type", "lz4",
                "outbox.publisher.require-transaction", "false")));
        OutboxPropertyKeys.check(env);

        env.getPropertySources().addFirst(new org.springframework.core.env.MapPropertySource("bad",
                java.util.Map.of("outbox.store.shards.count", "4")));
        assertThatThrownBy(() -> OutboxPropertyKeys.check(env)).isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.shards.count': is not a property");
    }

    @Test
    void aDeliveryTimeoutAboveTwoMinutesNamesOutboxKafkaDeliveryTimeout(CapturedOutput output) {
        startFails("spring.kafka.bootstrap-servers=127.0.0.1:1", "outbox.kafka.delivery-timeout=5m");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.kafka.delivery-timeout': '5m' is not valid")
                .doesNotContain("Outbox configuration property 'spring.kafka");
    }

    @Test
    void noBrokerChosenNorKafkaNamedWithRabbitMqOnTheClassPathNamesOutboxBroker(CapturedOutput output) {
        startFails();

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.broker': not set, so kafka (the default), and"
                        + " spring.kafka.bootstrap-servers is not set either, while outbox-broker-rabbitmq is on the"
                        + " class path")
                .contains("set outbox.broker=rabbitmq");
    }

    @Test
    void rabbitMqWithTheDefaultKafkaElectionAndNoKafkaNamesTheLeaderElection(CapturedOutput output) {
        startFails("outbox.broker=rabbitmq", "spring.rabbitmq.host=127.0.0.1");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.dispatcher.leader-election': is kafka (the"
                        + " default), which needs spring.kafka.bootstrap-servers, and outbox.broker is rabbitmq");
    }

    @Test
    void aConfirmTimeoutAboveTwoMinutesNamesOutboxRabbitMqConfirmTimeout(CapturedOutput output) {
        startFails("outbox.broker=rabbitmq", "outbox.dispatcher.leader-election=database",
                "spring.rabbitmq.host=127.0.0.1", "spring.rabbitmq.password=s3cret-rabbit",
                "outbox.rabbitmq.confirm-timeout=5m");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.rabbitmq.confirm-timeout': 'PT5M' is not valid:"
                        + " confirmTimeout must be between 1 ms and 120000 ms, was 300000 ms")
                .contains("Update the property 'outbox.rabbitmq.confirm-timeout'")
                .doesNotContain("s3cret-rabbit");
    }

    @Test
    void aMisspeltRabbitMqKeyNamesTheNearestKnownKey(CapturedOutput output) {
        startFails("outbox.broker=rabbitmq", "outbox.dispatcher.leader-election=database",
                "outbox.rabbitmq.confirm-timout=5s");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("'outbox.rabbitmq.confirm-timout': is not a property of the outbox starter (set in"
                        + " commandLineArgs); did you mean 'outbox.rabbitmq.confirm-timeout'?");
    }

    @Test
    void severalRabbitMqAddressesNameSpringRabbitMqAddresses(CapturedOutput output) {
        startFails("outbox.broker=rabbitmq", "outbox.dispatcher.leader-election=database",
                "spring.rabbitmq.addresses=amqp://app:s3cret-rabbit@127.0.0.1:1,127.0.0.1:2");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'spring.rabbitmq.addresses': lists 2 nodes")
                .doesNotContain("s3cret-rabbit");
    }
}
