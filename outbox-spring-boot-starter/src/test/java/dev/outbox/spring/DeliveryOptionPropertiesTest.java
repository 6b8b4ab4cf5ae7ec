package dev.outbox.spring;

import dev.outbox.DuplicateMessageException;
import dev.outbox.OutboxMessage;
import dev.outbox.spi.ScheduledMessages;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.h2.H2Store;
import dev.outbox.store.sql.SqlScheduling;
import dev.outbox.testservers.Jdbc;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The delivery options (docs/delivery-options.md) as store properties: {@code outbox.store.scheduling},
 * {@code outbox.store.scheduled-holds-key} and {@code outbox.store.idempotency.*} bound, reaching the store (which
 * then creates their tables and carries them out), off by default, and a bad value stopping start-up naming its
 * property.
 */
@ExtendWith(OutputCaptureExtension.class)
class DeliveryOptionPropertiesTest {

    private static OutboxProperties bind(Map<String, String> properties) {
        return new Binder(new MapConfigurationPropertySource(properties)).bind("outbox", OutboxProperties.class)
                .orElseGet(OutboxProperties::new);
    }

    private static boolean holdsKey(OutboxStoreFactory.Built built) {
        return ((SqlScheduling) built.store().capability(ScheduledMessages.class).orElseThrow()).holdsKey();
    }

    private static JdbcDataSource h2(String name) {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        return h2;
    }

    @Test
    void theOptionsReachTheStoreWhichCreatesTheirTablesAndCarriesThemOut() throws Exception {
        JdbcDataSource h2 = h2("delivery_options_on");
        OutboxProperties p = bind(Map.of("outbox.store.table", "opts", "outbox.store.scheduling", "true",
                "outbox.store.idempotency.retention", "7d", "outbox.store.idempotency.on-duplicate", "fail"));

        OutboxStoreFactory.Built built = OutboxStoreFactory.build(h2, "outbox.store", p.getStore());
        built.createSchema().run();
        OutboxMessage once = OutboxMessage.builder("orders", "k").value("v".getBytes()).idempotencyKey("order-1")
                .build();
        try (Connection c = h2.getConnection()) {
            built.store().publisher().publish(c, List.of(OutboxMessage.builder("orders", "k")
                    .value("later".getBytes()).deliverAfter(Duration.ofHours(1)).build()));
            built.store().publisher().publish(c, List.of(once));
            assertThatThrownBy(() -> built.store().publisher().publish(c, List.of(once)))
                    .as("on-duplicate=fail").isInstanceOf(DuplicateMessageException.class);
        }

        assertThat(((H2Store) built.store()).scheduling()).isTrue();
        assertThat(holdsKey(built)).as("the default").isTrue();
        assertThat(Jdbc.queryLong(h2, "SELECT COUNT(*) FROM \"opts_scheduled\"")).as("held by the first").isEqualTo(2);
        assertThat(Jdbc.queryLong(h2, "SELECT COUNT(*) FROM \"opts_idempotency\"")).isEqualTo(1);
    }

    @Test
    void theOptionsAreOffByDefaultAndSkipIsTheDefaultOnDuplicate() throws Exception {
        JdbcDataSource h2 = h2("delivery_options_off");
        OutboxStoreFactory.Built off = OutboxStoreFactory.build(h2, "outbox.store", bind(Map.of()).getStore());
        off.createSchema().run();
        try (Connection c = h2.getConnection()) {
            assertThatThrownBy(() -> off.store().publisher().publish(c, List.of(OutboxMessage.builder("orders", "k")
                    .value("v".getBytes()).deliverAfter(Duration.ofHours(1)).build())))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scheduling");
            assertThatThrownBy(() -> off.store().publisher().publish(c, List.of(OutboxMessage.builder("orders", "k")
                    .value("v".getBytes()).idempotencyKey("order-1").build())))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("order-1");
        }
        assertThat(((H2Store) off.store()).scheduling()).isFalse();

        JdbcDataSource skipping = h2("delivery_options_skip");
        OutboxStoreFactory.Built skip = OutboxStoreFactory.build(skipping, "outbox.store",
                bind(Map.of("outbox.store.idempotency.retention", "1h")).getStore());
        skip.createSchema().run();
        OutboxMessage once = OutboxMessage.builder("orders", "k").value("v".getBytes()).idempotencyKey("order-1")
                .build();
        try (Connection c = skipping.getConnection()) {
            skip.store().publisher().publish(c, List.of(once));
            skip.store().publisher().publish(c, List.of(once));
        }
        assertThat(Jdbc.queryLong(skipping, "SELECT COUNT(*) FROM \"outbox\"")).as("the duplicate skipped")
                .isEqualTo(1);
    }

    @Test
    void scheduledHoldsKeyFalseReachesTheStoreAndWithoutSchedulingNamesItsProperty() throws Exception {
        JdbcDataSource h2 = h2("delivery_options_not_held");
        OutboxStoreFactory.Built built = OutboxStoreFactory.build(h2, "outbox.store", bind(Map.of(
                "outbox.store.scheduling", "true", "outbox.store.scheduled-holds-key", "false")).getStore());
        built.createSchema().run();
        try (Connection c = h2.getConnection()) {
            built.store().publisher().publish(c, List.of(OutboxMessage.builder("orders", "k")
                    .value("later".getBytes()).deliverAfter(Duration.ofHours(1)).build()));
            built.store().publisher().publish(c, List.of(OutboxMessage.of("orders", "k", "now")));
        }
        assertThat(holdsKey(built)).isFalse();
        assertThat(Jdbc.queryLong(h2, "SELECT COUNT(*) FROM \"outbox\"")).as("not held").isEqualTo(1);

        OutboxProperties p = bind(Map.of("outbox.store.scheduled-holds-key", "false"));
        assertThatThrownBy(() -> OutboxStoreFactory.build(h2("delivery_options_not_held_bad"), "outbox.store",
                p.getStore())).isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.scheduled-holds-key': is false, but outbox.store.scheduling is"
                        + " not true");
    }

    @Test
    void aBadRetentionNamesItsProperty() {
        OutboxProperties p = bind(Map.of("outbox.store.idempotency.retention", "-5s"));

        assertThatThrownBy(() -> OutboxStoreFactory.build(h2("delivery_options_bad"), "outbox.store", p.getStore()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.idempotency.retention': 'PT-5S' is not valid");
    }

    @Test
    void failWithoutARetentionNamesOnDuplicate() {
        OutboxProperties p = bind(Map.of("outbox.store.idempotency.on-duplicate", "FAIL"));

        assertThatThrownBy(() -> OutboxStoreFactory.build(h2("delivery_options_fail"), "outbox.store", p.getStore()))
                .isInstanceOf(OutboxConfigurationException.class)
                .hasMessageContaining("'outbox.store.idempotency.on-duplicate': is FAIL, but idempotency keys are"
                        + " off: outbox.store.idempotency.retention is not set");
    }

    @Test
    void anUnknownOnDuplicateStopsStartUpNamingIt(CapturedOutput output) {
        startFails("outbox.store.idempotency.retention=1d", "outbox.store.idempotency.on-duplicate=ignore");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("outbox.store.idempotency.on-duplicate").contains("ignore");
    }

    @Test
    void schedulingWithTheWalHarvestStopsStartUpNamingScheduling(CapturedOutput output) {
        startFails("outbox.store.scheduling=true", "outbox.store.wal.url=jdbc:postgresql://127.0.0.1:1/none");

        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Outbox configuration property 'outbox.store.scheduling': is true, but the WAL harvest");
    }

    /** Starts the test application on a real Postgres with {@code properties}; expects it to fail. */
    private static void startFails(String... properties) {
        JdbcServer postgres = TestServers.postgres();
        List<String> all = new ArrayList<>(List.of(
                "spring.datasource.url=" + postgres.createDatabase("delivery_option_failures"),
                "spring.datasource.username=" + postgres.username(),
                "spring.datasource.password=" + postgres.password(),
                "spring.kafka.bootstrap-servers=127.0.0.1:1",
                "outbox.kafka.leader-topic=delivery-option-failures-leader"));
        all.addAll(List.of(properties));
        assertThatThrownBy(() -> new SpringApplicationBuilder(TestApplication.class)
                .web(WebApplicationType.NONE).run(all.stream().map(p -> "--" + p).toArray(String[]::new)).close())
                .isInstanceOf(Exception.class);
    }
}
