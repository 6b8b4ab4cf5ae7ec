package dev.outbox.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherObserver;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxSample;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.opentelemetry.TracingMessageDecorator;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.StreamSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operational surface end to end, on real Postgres and Kafka: the Micrometer binder scraped from a
 * {@link PrometheusMeterRegistry} while two dispatchers harvest an outbox with poison rows mixed in, and the
 * writer's trace carried through the outbox to the consumer.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ObservabilityEndToEndTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final DispatcherConfig CONFIG = DispatcherConfig.builder()
            .pollInterval(Duration.ofMillis(100)).heartbeatTimeout(Duration.ofSeconds(1))
            .drainTimeout(Duration.ofSeconds(3)).ioErrorBackoff(Duration.ofMillis(50))
            .maxIoErrorBackoff(Duration.ofMillis(500)).metricsInterval(Duration.ofMillis(200)).build();

    private static JdbcServer pg;
    private static KafkaServer kafka;
    private static HikariDataSource pool;

    @BeforeAll
    static void servers() {
        pg = TestServers.postgres();
        kafka = TestServers.kafka();
        String url = pg.createDatabase("observability");
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(url);
        hc.setUsername(pg.username());
        hc.setPassword(pg.password());
        hc.setMaximumPoolSize(8);
        hc.setPoolName("pool-observability");
        pool = new HikariDataSource(hc);
    }

    @AfterAll
    static void closePool() {
        if (pool != null) {
            pool.close();
        }
    }

    private static void sql(String statement) {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            throw new IllegalStateException(statement + ": " + e.getMessage(), e);
        }
    }

    private static KafkaMessageBroker broker() {
        return KafkaMessageBroker.builder().bootstrapServers(kafka.bootstrapServers())
                .deliveryTimeout(Duration.ofSeconds(2)).build();
    }

    @Test
    void prometheusScrapeShowsSentParkedLagAndOneLeaderAfterHarvestingWithPoisonRows() {
        String table = "metrics_outbox";
        String topic = "obs-metrics-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        PostgresStore store = PostgresStore.builder(pool).table(table).build();
        store.createSchema();
        int good = 400;
        int poison = 3;
        for (int batch = 0; batch < 4; batch++) {
            List<OutboxMessage> messages = new ArrayList<>();
            for (int i = 0; i < good / 4; i++) {
                messages.add(OutboxMessage.of(topic, "k" + (i % 17), "v" + (batch * 100 + i)));
            }
            try (Connection c = pool.getConnection()) {
                store.publisher().publish(c, messages);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            if (batch < poison) { // mixed in between good rows: header arrays of different lengths, by hand
                sql("INSERT INTO " + table + " (topic, key, value, header_names, header_values) VALUES ('" + topic
                        + "', 'poison-" + batch + "', 'x', ARRAY['a', 'b'], ARRAY['\\x01'::bytea])");
            }
        }
        sql("UPDATE " + table + " SET create_time = now() - interval '10 minutes'");

        String leaderTopic = topic + "-leader";
        List<Dispatcher> dispatchers = new ArrayList<>();
        List<PrometheusMeterRegistry> registries = new ArrayList<>();
        AtomicLong maxSampledLagMillis = new AtomicLong();
        try {
            for (int i = 0; i < 2; i++) {
                KafkaMessageBroker broker = broker();
                KafkaLeaderTransport transport = KafkaLeaderTransport.builder()
                        .bootstrapServers(kafka.bootstrapServers()).topic(leaderTopic).dispatcherConfig(CONFIG)
                        .deliveryTimeoutOf(broker).consumerProperty("session.timeout.ms", 6_000).build();
                Dispatcher d = Dispatcher.builder(store, broker).leaderTransport(transport).config(CONFIG)
                        .name("obs-d" + i).observer(new DispatcherObserver() {
                            @Override
                            public void sampled(OutboxSample sample) {
                                maxSampledLagMillis.accumulateAndGet(sample.lag().toMillis(), Math::max);
                            }
                        }).build();
                PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
                new OutboxMetrics(d, table).bindTo(registry);
                dispatchers.add(d);
                registries.add(registry);
            }
            dispatchers.forEach(Dispatcher::start);

            Await.untilOrFail(() -> store.backlog() == 0, WAIT, () -> "outbox drained, backlog " + store.backlog());
            Await.untilOrFail(() -> registries.stream().anyMatch(r -> value(r.scrape(), "outbox_leader") == 1
                    && value(r.scrape(), "outbox_lag_seconds") == 0 && value(r.scrape(), "outbox_parked") == poison
                    && value(r.scrape(), "outbox_backlog") == 0), WAIT,
                    () -> "a leader's scrape after the drain:\n" + registries.get(0).scrape() + "\n"
                            + registries.get(1).scrape());

            List<String> scrapes = registries.stream().map(PrometheusMeterRegistry::scrape).toList();
            assertThat(scrapes.stream().mapToDouble(s -> value(s, "outbox_leader")).sorted().toArray())
                    .as("leader gauge 1 on exactly one of two dispatchers").containsExactly(0.0, 1.0);
            assertThat(scrapes.stream().mapToDouble(s -> sum(s, "outbox_records_sent_total")).sum())
                    .as("sent = published").isEqualTo(good);
            assertThat(scrapes.stream().mapToDouble(s -> sum(s, "outbox_records_acknowledged_total")).sum())
                    .isEqualTo(good);
            assertThat(scrapes.stream().mapToDouble(s -> sum(s, "outbox_records_parked_total")).sum())
                    .as("parked = poison").isEqualTo(poison);
            assertThat(scrapes.stream().mapToDouble(s -> sum(s, "outbox_records_failed_total")).sum()).isZero();
            String standby = scrapes.stream().filter(s -> value(s, "outbox_leader") == 0).findFirst().orElseThrow();
            assertThat(value(standby, "outbox_lag_seconds")).as("a standby does not sample").isNaN();
            String leader = scrapes.stream().filter(s -> value(s, "outbox_leader") == 1).findFirst().orElseThrow();
            assertThat(sum(leader, "outbox_ack_latency_seconds_count")).isEqualTo(good);
            assertThat(leader).contains("outbox=\"" + table + "\"").contains("topic=\"" + topic + "\"");
            assertThat(store.parkedCount()).isEqualTo(poison);
            System.out.println("metrics e2e: largest lag sampled before the drain " + maxSampledLagMillis.get()
                    + " ms (rows were dated 10 minutes back; 0 if the drain beat the first sample)");
        } finally {
            dispatchers.forEach(Dispatcher::close);
            registries.forEach(PrometheusMeterRegistry::close);
        }
        assertThat(readAll(topic, good)).hasSize(good);
    }

    @Test
    void theConsumerContinuesTheWritersTraceThroughTheOutbox() throws Exception {
        InMemorySpanExporter spans = InMemorySpanExporter.create();
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans))
                        .build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                .build()) {
            String topic = "obs-traced-" + UUID.randomUUID();
            kafka.createTopic(topic, 1);
            PostgresStore store = PostgresStore.builder(pool).table("traced_outbox")
                    .decorator(TracingMessageDecorator.builder(otel).producerSpans(true).build()).build();
            store.createSchema();
            sql("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY, customer text NOT NULL)");

            Span writer = otel.getTracer("shop").spanBuilder("place order").startSpan();
            try (Scope ignored = writer.makeCurrent(); Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement insert = c.prepareStatement("INSERT INTO orders VALUES (?, ?)")) {
                    insert.setLong(1, 7001);
                    insert.setString(2, "customer-7");
                    insert.executeUpdate();
                }
                store.publisher().publish(c, OutboxMessage.of(topic, "customer-7", "{\"orderId\":7001}"));
                c.commit();
            } finally {
                writer.end();
            }

            try (Dispatcher d = Dispatcher.builder(store, broker()).config(CONFIG).name("obs-traced").build()) {
                d.start();
                List<ConsumerRecord<String, byte[]>> got = readAll(topic, 1);
                assertThat(got).hasSize(1);
                Context extracted = otel.getPropagators().getTextMapPropagator()
                        .extract(Context.root(), got.get(0).headers(), KAFKA_HEADERS);
                Span consumer = otel.getTracer("consumer").spanBuilder("process " + topic)
                        .setSpanKind(SpanKind.CONSUMER).setParent(extracted).startSpan();
                consumer.end();

                SpanData producer = spans.getFinishedSpanItems().stream()
                        .filter(s -> s.getKind() == SpanKind.PRODUCER).findFirst().orElseThrow();
                SpanContext remote = Span.fromContext(extracted).getSpanContext();
                String traceId = writer.getSpanContext().getTraceId();
                assertThat(remote.getTraceId()).as("the record carries the writer's trace").isEqualTo(traceId);
                assertThat(remote.getSpanId()).as("the record's parent is the PRODUCER span")
                        .isEqualTo(producer.getSpanId());
                assertThat(producer.getParentSpanId()).isEqualTo(writer.getSpanContext().getSpanId());
                assertThat(producer.getTraceId()).isEqualTo(traceId);
                SpanData consumed = spans.getFinishedSpanItems().stream()
                        .filter(s -> s.getKind() == SpanKind.CONSUMER).findFirst().orElseThrow();
                assertThat(consumed.getTraceId()).as("the consumer's span joins the writer's trace")
                        .isEqualTo(traceId);
                assertThat(consumed.getParentSpanId()).isEqualTo(producer.getSpanId());
                assertThat(new String(got.get(0).value(), StandardCharsets.UTF_8)).isEqualTo("{\"orderId\":7001}");
            }
        }
    }

    private static final TextMapGetter<Headers> KAFKA_HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Headers carrier) {
            return StreamSupport.stream(carrier.spliterator(), false).map(h -> h.key()).toList();
        }

        @Override
        public String get(Headers carrier, String key) {
            var h = Objects.requireNonNull(carrier).lastHeader(key);
            return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        }
    };

    /** Reads {@code topic} from the beginning until {@code expected} records arrived (or the wait is over). */
    private static List<ConsumerRecord<String, byte[]>> readAll(String topic, int expected) {
        try (KafkaConsumer<String, byte[]> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(partitions);
            c.seekToBeginning(partitions);
            List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (out.size() < expected && System.nanoTime() - deadline < 0) {
                c.poll(Duration.ofMillis(100)).forEach(out::add);
            }
            return out;
        }
    }

    private static final Pattern SAMPLE = Pattern.compile("^([a-z_]+)(\\{[^}]*})? (\\S+)$", Pattern.MULTILINE);

    /** The sum of every sample of metric {@code name} in a Prometheus scrape. */
    private static double sum(String scrape, String name) {
        double total = 0;
        Matcher m = SAMPLE.matcher(scrape);
        while (m.find()) {
            if (m.group(1).equals(name)) {
                total += Double.parseDouble(m.group(3));
            }
        }
        return total;
    }

    /** The value of the one sample of metric {@code name} in a Prometheus scrape. */
    private static double value(String scrape, String name) {
        Matcher m = SAMPLE.matcher(scrape);
        List<Double> values = new ArrayList<>();
        while (m.find()) {
            if (m.group(1).equals(name)) {
                values.add(Double.parseDouble(m.group(3)));
            }
        }
        assertThat(values).as(name + " in\n" + scrape).hasSize(1);
        return values.get(0);
    }
}
