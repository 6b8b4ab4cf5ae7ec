package dev.outbox.spring;

import dev.outbox.Dispatcher;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code outbox.dispatcher.leader-election=database}: two instances of one application (two contexts in this JVM) on
 * one Postgres outbox elect their leader by the lease in the database — no leader topic is configured or created —
 * and when the leader's context closes, the other takes over at its next try, the lease released on close.
 */
class DatabaseElectionTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Test
    void twoContextsElectOneLeaderInTheDatabaseAndTheOtherTakesOverOnClose() {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        String url = postgres.createDatabase("starter_database_election");
        String[] properties = {
                "spring.datasource.url=" + url,
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "outbox.dispatcher.leader-election=database"};
        ConfigurableApplicationContext first = start(properties);
        ConfigurableApplicationContext second = start(properties);
        try {
            Dispatcher a = dispatcher(first);
            Dispatcher b = dispatcher(second);
            Await.untilOrFail(() -> a.isLeader() || b.isLeader(), TIMEOUT, () -> "a leader elected");
            assertThat(a.isLeader() && b.isLeader()).as("both lead").isFalse();
            ConfigurableApplicationContext leader = a.isLeader() ? first : second;
            Dispatcher survivor = a.isLeader() ? b : a;
            long closing = System.nanoTime();
            leader.close();
            Await.untilOrFail(survivor::isLeader, TIMEOUT, () -> "the standby took over");
            long took = (System.nanoTime() - closing) / 1_000_000;
            System.out.println("database election: the standby led " + took + " ms after the leader's context"
                    + " began to close");
            // The lease was released on close: no waiting for it to expire (15 s with the defaults).
            assertThat(took).isLessThan(10_000);
        } finally {
            second.close();
            first.close();
        }
    }

    private static ConfigurableApplicationContext start(String[] properties) {
        return new SpringApplicationBuilder(TestApplication.class).web(WebApplicationType.NONE)
                .run(Arrays.stream(properties).map(p -> "--" + p).toArray(String[]::new));
    }

    private static Dispatcher dispatcher(ConfigurableApplicationContext context) {
        return context.getBean(OutboxDispatcherLifecycle.class).dispatcher();
    }
}
