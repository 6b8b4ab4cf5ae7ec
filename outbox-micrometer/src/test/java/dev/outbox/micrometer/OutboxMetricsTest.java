package dev.outbox.micrometer;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.OutboxMessage;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.InMemoryLeaderGroup;
import dev.outbox.testkit.InMemoryStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The binder over the in-memory fakes: what each meter counts, its tags, the topic bound, standby, close. */
class OutboxMetricsTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder()
            .pollInterval(Duration.ofMillis(10)).markBackoff(Duration.ofMillis(1))
            .heartbeatTimeout(Duration.ofMillis(300)).ioErrorBackoff(Duration.ofMillis(5))
            .maxIoErrorBackoff(Duration.ofMillis(50)).maxAttempts(2).metricsInterval(Duration.ofMillis(50))
            .build();

    private final List<Dispatcher> dispatchers = new ArrayList<>();

    @AfterEach
    void close() {
        dispatchers.forEach(Dispatcher::close);
    }

    private Dispatcher dispatcher(InMemoryStore store, InMemoryBroker broker) {
        Dispatcher d = Dispatcher.builder(store, broker).config(CONFIG).build();
        dispatchers.add(d);
        return d;
    }

    private static double count(MeterRegistry r, String name, String topic) {
        return r.get(name).tags("outbox", "orders_outbox", "topic", topic).counter().count();
    }

    @Test
    void countsTimesAndSamplesTheHarvestWithOutboxAndTopicTags() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> r.key().equals("poison")
                ? dev.outbox.testkit.BrokerFaults.Fault.of(dev.outbox.testkit.BrokerFaults.Outcome.FAIL_RETRIABLE)
                : dev.outbox.testkit.BrokerFaults.Fault.ACK).build();
        List<OutboxMessage> batch = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            batch.add(OutboxMessage.of(i % 3 == 0 ? "payments" : "orders", "k" + (i % 5), "v" + i));
        }
        batch.add(OutboxMessage.of("orders", "poison", "never"));
        store.publisher().publish(null, batch);
        store.insertMalformed("orders", "unreadable", "bad headers");
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Dispatcher d = dispatcher(store, broker);
        new OutboxMetrics(d, "orders_outbox", Tags.of("app", "shop")).bindTo(registry);
        d.start();

        Await.untilOrFail(() -> store.size() == 0 && registry.get(OutboxMetrics.BACKLOG).gauge().value() == 0
                && registry.get(OutboxMetrics.PARKED).gauge().value() == 2
                // observers hear of a delivery after its row is purged: wait for them too
                && registry.find(OutboxMetrics.ACK_LATENCY).timer() != null
                && registry.get(OutboxMetrics.ACK_LATENCY).timer().count() == 30
                && registry.find(OutboxMetrics.RECORDS_PARKED).tag("topic", "orders").counter() != null
                && count(registry, OutboxMetrics.RECORDS_PARKED, "orders") == 2, WAIT,
                () -> store + " " + registry.getMetersAsString());
        assertThat(count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, "orders")).isEqualTo(20);
        assertThat(count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, "payments")).isEqualTo(10);
        assertThat(count(registry, OutboxMetrics.RECORDS_SENT, "orders")).as("20 + 2 attempts of the poison")
                .isEqualTo(22);
        assertThat(count(registry, OutboxMetrics.RECORDS_FAILED, "orders")).isEqualTo(2);
        assertThat(count(registry, OutboxMetrics.RECORDS_PARKED, "orders")).as("the poison and the unreadable")
                .isEqualTo(2);
        assertThat(registry.get(OutboxMetrics.LEADER).tags("app", "shop").gauge().value()).isEqualTo(1);
        assertThat(registry.get(OutboxMetrics.LAG).timeGauge().value(TimeUnit.SECONDS)).isZero();
        assertThat(registry.get(OutboxMetrics.READ_AGE).timeGauge().value(TimeUnit.SECONDS))
                .as("an idle leader reads every pollInterval").isBetween(0.0, 5.0);
        assertThat(registry.get(OutboxMetrics.RECORDS_IN_FLIGHT).gauge().value()).isZero();
        assertThat(registry.get(OutboxMetrics.RECORDS_HELD).gauge().value()).isZero();
        assertThat(registry.get(OutboxMetrics.KEYS_HELD).gauge().value()).isZero();
        assertThat(registry.get(OutboxMetrics.ACK_LATENCY).timer().count()).isEqualTo(30);
        assertThat(registry.get(OutboxMetrics.SEND_DURATION).timer().count()).isEqualTo(30);
        assertThat(registry.get(OutboxMetrics.MARK_DURATION).timer().count()).isPositive();
        assertThat(registry.get(OutboxMetrics.MARK_SIZE).summary().totalAmount()).as("every row marked at least"
                + " once: 30 records, the poison and the unreadable row (a failed delivery re-marks nothing)")
                .isGreaterThanOrEqualTo(32);
        assertThat(registry.get(OutboxMetrics.PURGE_SIZE).summary().totalAmount()).isEqualTo(30);
        assertThat(registry.get(OutboxMetrics.PURGE_DURATION).timer().count()).isPositive();
        assertThat(registry.get(OutboxMetrics.CALLBACK_ERRORS).functionCounter().count()).isZero();
        registry.getMeters().forEach(m -> {
            assertThat(m.getId().getTag("outbox")).as(m.getId().toString()).isEqualTo("orders_outbox");
            assertThat(m.getId().getTag("key")).as("never the key").isNull();
        });
    }

    @Test
    void aParkedLatestOnlyRecordDiscardedOnceSupersededCountsAsSuperseded() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = InMemoryBroker.builder().faults(r -> "old".equals(new String(r.message().value(),
                java.nio.charset.StandardCharsets.UTF_8))
                ? dev.outbox.testkit.BrokerFaults.Fault.of(dev.outbox.testkit.BrokerFaults.Outcome.FAIL_PERMANENT)
                : dev.outbox.testkit.BrokerFaults.Fault.ACK).build();
        store.publisher().publish(null, List.of(OutboxMessage.builder("prices", "sku").value("old").latestOnly()
                .build()));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Dispatcher d = dispatcher(store, broker);
        new OutboxMetrics(d, "orders_outbox").bindTo(registry);
        d.start();
        Await.untilOrFail(() -> store.parkedCount() == 1, WAIT, () -> store.toString());
        store.publisher().publish(null, List.of(OutboxMessage.builder("prices", "sku").value("new").latestOnly()
                .build()));

        Await.untilOrFail(() -> store.parkedCount() == 0 && registry.find(OutboxMetrics.RECORDS_SUPERSEDED)
                .tag("topic", "prices").counter() != null
                && count(registry, OutboxMetrics.RECORDS_SUPERSEDED, "prices") == 1, WAIT,
                registry::getMetersAsString);
        assertThat(count(registry, OutboxMetrics.RECORDS_PARKED, "prices")).isEqualTo(1);
        assertThat(count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, "prices")).isEqualTo(1);
    }

    @Test
    void topicTagsAreBoundedAndTheRestShareOther() {
        InMemoryStore store = new InMemoryStore();
        List<OutboxMessage> batch = new ArrayList<>();
        int topics = OutboxMetrics.MAX_TOPIC_TAGS + 20;
        for (int i = 0; i < topics; i++) {
            batch.add(OutboxMessage.of("topic-" + i, "k", "v"));
        }
        store.publisher().publish(null, batch);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Dispatcher d = dispatcher(store, new InMemoryBroker());
        new OutboxMetrics(d, "orders_outbox").bindTo(registry);
        d.start();

        Await.untilOrFail(() -> registry.get(OutboxMetrics.RECORDS_ACKNOWLEDGED).counters().stream()
                .mapToDouble(c -> c.count()).sum() == topics, WAIT, registry::getMetersAsString);
        assertThat(registry.get(OutboxMetrics.RECORDS_ACKNOWLEDGED).counters())
                .hasSize(OutboxMetrics.MAX_TOPIC_TAGS + 1);
        assertThat(count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, OutboxMetrics.OTHER_TOPIC)).isEqualTo(20);
    }

    @Test
    void aStandbyReportsNoLeadershipAndNoSampledFigures() {
        InMemoryStore store = new InMemoryStore();
        InMemoryLeaderGroup group = new InMemoryLeaderGroup();
        Dispatcher leader = Dispatcher.builder(store, new InMemoryBroker()).config(CONFIG)
                .leaderTransport(group.newMember()).build();
        dispatchers.add(leader);
        leader.start();
        Await.untilOrFail(leader::isLeader, WAIT, () -> leader.health().toString());
        Dispatcher d = Dispatcher.builder(store, new InMemoryBroker()).config(CONFIG)
                .leaderTransport(group.newMember()).build();
        dispatchers.add(d);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new OutboxMetrics(d, "orders_outbox").bindTo(registry);
        d.start();
        Await.untilOrFail(() -> d.health().status() == dev.outbox.DispatcherHealth.Status.STANDBY, WAIT,
                () -> d.health().toString());

        assertThat(registry.get(OutboxMetrics.LEADER).gauge().value()).isZero();
        assertThat(registry.get(OutboxMetrics.BACKLOG).gauge().value()).isNaN();
        assertThat(registry.get(OutboxMetrics.PARKED).gauge().value()).isNaN();
        assertThat(registry.get(OutboxMetrics.LAG).timeGauge().value(TimeUnit.SECONDS)).isNaN();
        assertThat(registry.get(OutboxMetrics.READ_AGE).timeGauge().value(TimeUnit.SECONDS)).isNaN();
    }

    @Test
    void closeStopsRecording() {
        InMemoryStore store = new InMemoryStore();
        InMemoryBroker broker = new InMemoryBroker();
        Dispatcher d = dispatcher(store, broker);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        OutboxMetrics metrics = new OutboxMetrics(d, "orders_outbox");
        metrics.bindTo(registry);
        d.start();
        store.publisher().publish(null, List.of(OutboxMessage.of("orders", "k", "1")));
        // A topic's counters are all registered at its first send: wait for the acknowledgement itself.
        Await.untilOrFail(() -> registry.find(OutboxMetrics.RECORDS_ACKNOWLEDGED).tag("topic", "orders")
                .counter() != null && count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, "orders") == 1,
                WAIT, registry::getMetersAsString);

        metrics.close();
        store.publisher().publish(null, List.of(OutboxMessage.of("orders", "k", "2")));
        Await.untilOrFail(() -> broker.deliveredCount() == 2 && store.size() == 0, WAIT, store::toString);
        assertThat(count(registry, OutboxMetrics.RECORDS_ACKNOWLEDGED, "orders")).isEqualTo(1);
    }

    @Test
    void aBlankOutboxNameIsRejectedNamingIt() {
        Dispatcher d = dispatcher(new InMemoryStore(), new InMemoryBroker());
        assertThatThrownBy(() -> new OutboxMetrics(d, " ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outbox");
    }
}
