package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.DispatcherHealth;
import dev.outbox.OutboxMessage;
import dev.outbox.OutboxRecord;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.store.postgres.PostgresStore;
import dev.outbox.testkit.Await;
import dev.outbox.testkit.InMemoryBroker;
import dev.outbox.testkit.InMemoryStore;
import dev.outbox.testservers.JdbcServer;
import dev.outbox.testservers.TestServers;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs the README's Observability snippets ({@link ObservabilitySnippets}). */
class ObservabilitySnippetsTest {

    @Test
    void metricsAndHealthSnippetsObserveARunningDispatcher() {
        InMemoryStore store = new InMemoryStore();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Dispatcher dispatcher = Dispatcher.builder(store, new InMemoryBroker())
                .config(DispatcherConfig.builder().metricsInterval(Duration.ofMillis(50)).build()).build()) {
            ObservabilitySnippets.bindMetrics(dispatcher, registry);
            dispatcher.start();
            store.publisher().publish(null, List.of(OutboxMessage.of("orders", "k", "v")));
            Await.untilOrFail(() -> registry.find(OutboxMetrics.RECORDS_ACKNOWLEDGED).tag("topic", "orders")
                    .counter() != null && dispatcher.health().lag().isPresent(), Duration.ofSeconds(20),
                    registry::getMetersAsString);
            assertThat(dispatcher.health().status()).isEqualTo(DispatcherHealth.Status.LEADER);
            assertThat(ObservabilitySnippets.lagging(dispatcher)).isFalse();
        }
    }

    @Test
    void tracingSnippetPutsTheWritersTraceIntoTheStoredMessage() throws Exception {
        JdbcServer postgres = TestServers.postgres();
        InMemorySpanExporter spans = InMemorySpanExporter.create();
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans))
                        .build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build()) {
            var dataSource = postgres.dataSource(postgres.createDatabase("observability_snippets"));
            PostgresStore store = ObservabilitySnippets.tracedStore(dataSource, otel);
            store.createSchema();
            Span span = otel.getTracer("test").spanBuilder("place order").startSpan();
            try (Scope ignored = span.makeCurrent(); Connection c = dataSource.getConnection()) {
                store.publisher().publish(c, OutboxMessage.of("orders", "k", "v"));
            } finally {
                span.end();
            }
            OutboxRecord marked = store.mark(UUID.randomUUID(), 1).records().get(0);
            assertThat(marked.message().headers()).singleElement().satisfies(h -> {
                assertThat(h.name()).isEqualTo("traceparent");
                assertThat(h.valueAsString()).contains(span.getSpanContext().getTraceId());
            });
        }
    }
}
