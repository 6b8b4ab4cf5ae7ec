package dev.outbox.spring;

import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.OutboxAwait;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import javax.sql.DataSource;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The test kit's {@link OutboxAwait} in a Spring Boot application on a real Postgres and Kafka, declared as a bean
 * (the starter attaches it to the dispatcher as an observer), with a {@link KafkaInboxConsumer} applying the orders'
 * events through a {@link PostgresInbox}: {@code untilApplied} returns once every order placed before the call is
 * in the consumer's table, fails naming what is left when the consumer is held up, and at once naming the reason
 * when the consumer gave up on one.
 */
class InboxAwaitTest {
    private static final int ORDERS = 40;

    /** The test's own configuration: the waiter as a bean, over the outbox and the inbox in the one database. */
    @Configuration(proxyBeanMethods = false)
    static class AwaitConfiguration {
        @Bean
        OutboxAwait outboxAwait(DataSource dataSource) {
            return OutboxAwait.builder(dataSource).inbox(dataSource, "inbox").build();
        }
    }

    private static ConfigurableApplicationContext start(JdbcServer postgres, String url, KafkaServer kafka) {
        return new SpringApplicationBuilder(TestApplication.class, AwaitConfiguration.class)
                .web(WebApplicationType.NONE)
                .run("--spring.datasource.url=" + url, "--spring.datasource.username=" + postgres.username(),
                        "--spring.datasource.password=" + postgres.password(), "--spring.flyway.enabled=true",
                        "--spring.flyway.locations=classpath:db/migration,"
                                + "classpath:dev/outbox/migrations/versioned/postgresql,"
                                + "classpath:dev/outbox/migrations/versioned/postgresql-inbox",
                        "--spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                        "--outbox.dispatcher.leader-election=false");
    }

    /** A consumer of "orders" that writes each order's key into applied, after {@code gate} opens. */
    private static KafkaInboxConsumer consumer(DataSource db, KafkaServer kafka, String group, CountDownLatch gate,
                                               boolean alwaysFail) {
        KafkaInboxConsumer consumer = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                .groupId(group).topics("orders").dataSource(db).inbox(PostgresInbox.builder(db).build())
                .consumerName("billing").maxAttempts(alwaysFail ? 1 : 5)
                .handler((connection, record, messageId) -> {
                    if (!gate.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the gate stayed closed");
                    }
                    if (alwaysFail) {
                        throw new IllegalStateException("billing refuses " + record.key());
                    }
                    try (PreparedStatement s = connection.prepareStatement("INSERT INTO applied (k) VALUES (?)")) {
                        s.setString(1, record.key());
                        s.executeUpdate();
                    }
                }).build();
        consumer.start();
        return consumer;
    }

    @Test
    void untilAppliedReturnsOnceEveryOrderPlacedBeforeTheCallIsApplied() {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("await_inbox");
        DataSource db = postgres.dataSource(url);
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        try (ConfigurableApplicationContext context = start(postgres, url, kafka);
             KafkaInboxConsumer ignored = consumer(db, kafka, "await-inbox", new CountDownLatch(0), false)) {
            Jdbc.execute(db, "CREATE TABLE applied (k text NOT NULL)");
            JdbcOrders orders = context.getBean(JdbcOrders.class);
            OutboxAwait await = context.getBean(OutboxAwait.class);
            for (int id = 1; id <= ORDERS / 2; id++) {
                orders.place(id, "first-" + id, false);
            }
            await.untilApplied("billing", Duration.ofSeconds(60));
            // (the topic is shared with the other tests of the JVM's Kafka: count this test's keys)
            assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM applied WHERE k LIKE 'first-%'"))
                    .isEqualTo(ORDERS / 2);

            for (int id = ORDERS / 2 + 1; id <= ORDERS; id++) {
                orders.place(id, "second-" + id, false);
            }
            await.untilApplied("billing", Set.of("orders"), Duration.ofSeconds(60));

            // nothing more is awaited: everything is applied when it returns
            assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM applied WHERE k LIKE 'first-%' OR k LIKE 'second-%'"))
                    .isEqualTo(ORDERS);
        }
    }

    @Test
    void aTimeoutNamesWhatIsNotAppliedAndAFailureFailsAtOnceWithItsReason() {
        JdbcServer postgres = TestServers.postgres();
        String url = postgres.createDatabase("await_inbox_failures");
        DataSource db = postgres.dataSource(url);
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        CountDownLatch gate = new CountDownLatch(1);
        try (ConfigurableApplicationContext context = start(postgres, url, kafka)) {
            Jdbc.execute(db, "CREATE TABLE applied (k text NOT NULL)");
            OutboxAwait await = context.getBean(OutboxAwait.class);
            try (KafkaInboxConsumer ignored = consumer(db, kafka, "await-held", gate, false)) {
                context.getBean(JdbcOrders.class).place(1, "held", false);

                assertThatThrownBy(() -> await.untilApplied("billing", Duration.ofSeconds(3)))
                        .isInstanceOf(AssertionError.class)
                        .hasMessageContaining("not applied within PT3S by consumer billing: 1 published record(s)")
                        .hasMessageContaining("(outbox id 1, topic orders)");
                gate.countDown();
                await.untilApplied("billing", Duration.ofSeconds(60));
                assertThat(Jdbc.queryLong(db, "SELECT count(*) FROM applied WHERE k = 'held'")).isEqualTo(1);
            }
            try (KafkaInboxConsumer ignored = consumer(db, kafka, "await-refused", new CountDownLatch(0), true)) {
                context.getBean(JdbcOrders.class).place(2, "refused", false);
                long started = System.nanoTime();

                assertThatThrownBy(() -> await.untilApplied("billing", Duration.ofSeconds(60)))
                        .isInstanceOf(AssertionError.class)
                        .hasMessageContaining("consumer billing gave up on a record published before the call")
                        .hasMessageContaining("(outbox id 2, topic orders)")
                        .hasMessageContaining("billing refuses refused");
                assertThat(Duration.ofNanos(System.nanoTime() - started)).as("at once, not after the timeout")
                        .isLessThan(Duration.ofSeconds(30));
            }
        }
    }
}
