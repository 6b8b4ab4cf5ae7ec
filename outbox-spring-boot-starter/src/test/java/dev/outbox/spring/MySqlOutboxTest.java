package dev.outbox.spring;

import dev.outbox.testkit.Capabilities;

import dev.outbox.spi.CommitSignals;

import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.mysql.MySqlStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The starter on a MySQL 8 and an in-process Kafka: the store type is detected from the JDBC metadata, the outbox
 * tables come from the shipped Liquibase changelog (included by the application's own).
 */
@SpringBootTest(classes = TestApplication.class)
class MySqlOutboxTest extends JdbcOutboxContract {
    private static final KafkaServer KAFKA = TestServers.kafka();

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        JdbcServer mysql = TestServers.mysql();
        String url = mysql.createDatabase("starter_mysql");
        KAFKA.createTopic("orders", 3);
        registry.add("spring.datasource.url", () -> url);
        registry.add("spring.datasource.username", mysql::username);
        registry.add("spring.datasource.password", mysql::password);
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("outbox.kafka.leader-topic", () -> "starter-mysql-leader");
        registry.add("spring.liquibase.enabled", () -> "true");
        registry.add("spring.liquibase.change-log", () -> "classpath:db/changelog/test-changelog.xml");
    }

    @Override
    String bootstrapServers() {
        return KAFKA.bootstrapServers();
    }

    @Test
    void theStoreWasDetectedAsMySql() {
        assertThat(store).isInstanceOf(MySqlStore.class);
    }

    /**
     * MySQL cannot notify the leader of a commit: the starter's publisher does, after the transaction commits
     * (once per transaction), through the store's local commit watch; a rolled-back transaction wakes nothing.
     */
    @Test
    void aCommittedTransactionWakesALeaderInThisProcessAndARolledBackOneDoesNot() {
        AtomicInteger wakeUps = new AtomicInteger();
        try (CommitSignals.CommitWatch watch = Capabilities.signals(store).watchCommits(wakeUps::incrementAndGet)) {
            orders.place(1001, "wake-up", false);
            assertThat(wakeUps).as("after the commit").hasValue(1);
            assertThatThrownBy(() -> orders.place(1002, "wake-up", true)).isInstanceOf(IllegalStateException.class);
            assertThat(wakeUps).as("a rollback wakes nothing").hasValue(1);
        }
    }
}
