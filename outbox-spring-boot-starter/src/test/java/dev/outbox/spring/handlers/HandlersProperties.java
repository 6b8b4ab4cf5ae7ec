package dev.outbox.spring.handlers;

import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.springframework.test.context.DynamicPropertyRegistry;

import java.util.LinkedHashMap;
import java.util.Map;

/** The settings of the handlers tests: a fresh Postgres database, leader election over Kafka, quick retries. */
final class HandlersProperties {
    private HandlersProperties() {
    }

    static Map<String, String> of(String database, String leaderTopic) {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        Map<String, String> p = new LinkedHashMap<>();
        p.put("spring.datasource.url", postgres.createDatabase(database));
        p.put("spring.datasource.username", postgres.username());
        p.put("spring.datasource.password", postgres.password());
        p.put("spring.kafka.bootstrap-servers", kafka.bootstrapServers());
        p.put("spring.flyway.enabled", "true");
        p.put("spring.flyway.locations", "classpath:dev/outbox/migrations/postgresql");
        p.put("outbox.broker", "handlers");
        p.put("outbox.kafka.leader-topic", leaderTopic);
        p.put("outbox.dispatcher.io-error-backoff", "20ms");
        p.put("outbox.dispatcher.max-io-error-backoff", "200ms");
        p.put("outbox.handlers.timeout", "5s");
        return p;
    }

    static void register(DynamicPropertyRegistry registry, String database, String leaderTopic) {
        of(database, leaderTopic).forEach((k, v) -> registry.add(k, () -> v));
    }
}
