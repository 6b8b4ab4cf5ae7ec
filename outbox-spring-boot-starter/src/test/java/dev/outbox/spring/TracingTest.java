package dev.outbox.spring;

import dev.outbox.broker.kafka.KafkaInboxConsumer;
import dev.outbox.opentelemetry.TracingMessageDecorator;
import dev.outbox.opentelemetry.TracingRecordHandler;
import dev.outbox.spring.app.JdbcOrders;
import dev.outbox.spring.app.TestApplication;
import dev.outbox.store.postgres.PostgresInbox;
import dev.outbox.testkit.Await;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.KafkaServer;
import dev.outbox.testservers.TestServers;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tracing auto-configured: with {@code outbox-opentelemetry} and an {@link OpenTelemetry} bean, a trace started in
 * the writer continues in the handler of a {@link KafkaInboxConsumer} (wrapped in {@link TracingRecordHandler}), on a
 * real Postgres and Kafka, asserted with the OpenTelemetry SDK's in-memory exporter.
 */
class TracingTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();

    @Configuration(proxyBeanMethods = false)
    static class Tracing {
        @Bean(destroyMethod = "close")
        OpenTelemetrySdk openTelemetry() {
            return OpenTelemetrySdk.builder()
                    .setTracerProvider(SdkTracerProvider.builder()
                            .addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build())
                    .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                    .build();
        }
    }

    @Test
    void aTraceStartedInTheWriterContinuesInTheInboxConsumer() {
        JdbcServer postgres = TestServers.postgres();
        KafkaServer kafka = TestServers.kafka();
        kafka.createTopic("orders", 3);
        String url = postgres.createDatabase("starter_tracing");
        String[] args = {
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + postgres.username(),
                "--spring.datasource.password=" + postgres.password(),
                "--spring.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
                "--spring.flyway.enabled=true",
                "--spring.flyway.locations=classpath:db/migration,classpath:dev/outbox/migrations/postgresql",
                "--outbox.dispatcher.leader-election=false"};
        String customer = "traced-" + UUID.randomUUID();
        Map<String, String> traceIdSeenByHandler = new ConcurrentHashMap<>();
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TestApplication.class,
                Tracing.class).web(WebApplicationType.NONE).run(args)) {
            assertThat(context.getBeansOfType(TracingMessageDecorator.class)).hasSize(1);
            OpenTelemetry otel = context.getBean(OpenTelemetry.class);
            DataSource db = context.getBean(DataSource.class);
            PostgresInbox inbox = PostgresInbox.builder(db).table("tracing_inbox").build();
            inbox.createSchema();

            Span writer = otel.getTracer("orders-service").spanBuilder("place order").startSpan();
            try (Scope ignored = writer.makeCurrent()) {
                context.getBean(JdbcOrders.class).place(1, customer, false);
            } finally {
                writer.end();
            }

            try (KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
                    .bootstrapServers(kafka.bootstrapServers()).groupId("tracing-" + UUID.randomUUID())
                    .topics("orders").dataSource(db).inbox(inbox)
                    .handler(TracingRecordHandler.wrap(otel, (connection, record, messageId) -> {
                        if (customer.equals(record.key())) {
                            traceIdSeenByHandler.put(customer, Span.current().getSpanContext().getTraceId());
                        }
                    }))
                    .build()) {
                consumer.start();
                Await.untilOrFail(() -> traceIdSeenByHandler.containsKey(customer), TIMEOUT,
                        () -> "the handler ran for " + customer + "; consumer failure: " + consumer.failure());
            }

            String traceId = writer.getSpanContext().getTraceId();
            assertThat(traceIdSeenByHandler.get(customer)).as("the handler's current trace").isEqualTo(traceId);
            SpanData consumerSpan = SPANS.getFinishedSpanItems().stream()
                    .filter(s -> s.getKind() == SpanKind.CONSUMER && s.getTraceId().equals(traceId)).findFirst()
                    .orElseThrow(() -> new AssertionError("no consumer span of trace " + traceId + " in "
                            + SPANS.getFinishedSpanItems()));
            assertThat(consumerSpan.getName()).isEqualTo("process orders");
            assertThat(consumerSpan.getParentSpanId()).isEqualTo(writer.getSpanContext().getSpanId());
        }
    }
}
