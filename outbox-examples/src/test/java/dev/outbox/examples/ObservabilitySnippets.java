package dev.outbox.examples;

import dev.outbox.Dispatcher;
import dev.outbox.DispatcherHealth;
import dev.outbox.micrometer.OutboxMetrics;
import dev.outbox.opentelemetry.TracingMessageDecorator;
import dev.outbox.store.postgres.PostgresStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.sql.DataSource;
import java.time.Duration;

/**
 * The README's Observability snippets, in compiled code that {@code ObservabilitySnippetsTest} runs; the regions
 * between {@code tag::} and {@code end::} are what the README shows (checked by {@code ReadmeSnippetsTest}).
 */
final class ObservabilitySnippets {
    private static final Logger log = LoggerFactory.getLogger(ObservabilitySnippets.class);

    private ObservabilitySnippets() {
    }

    static OutboxMetrics bindMetrics(Dispatcher dispatcher, MeterRegistry registry) {
        // tag::metrics[]
        OutboxMetrics metrics = new OutboxMetrics(dispatcher, "outbox");   // the tag outbox="outbox": the table
        metrics.bindTo(registry);                                         // Prometheus, OTLP, any MeterRegistry
        // end::metrics[]
        return metrics;
    }

    static PostgresStore tracedStore(DataSource dataSource, OpenTelemetry openTelemetry) {
        // tag::tracing[]
        PostgresStore store = PostgresStore.builder(dataSource)
                .decorator(TracingMessageDecorator.builder(openTelemetry)   // traceparent, tracestate, baggage
                        .producerSpans(true)                                // optional: a PRODUCER span per message
                        .build())
                .build();
        // end::tracing[]
        return store;
    }

    static boolean lagging(Dispatcher dispatcher) {
        // tag::health[]
        DispatcherHealth health = dispatcher.health();            // no I/O: call it from any thread, at any rate
        boolean lagging = health.lag().filter(lag -> lag.compareTo(Duration.ofMinutes(1)) > 0).isPresent();
        if (lagging) {                                            // only the leader samples the lag
            log.warn("Outbox lag {}; last failure {}", health.lag().orElseThrow(), health.lastFailure());
        }
        // end::health[]
        return lagging;
    }
}
