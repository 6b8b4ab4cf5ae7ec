package dev.outbox.opentelemetry;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link TracingRecordHandler} over records carrying the headers {@link TracingMessageDecorator} wrote: the handler
 * runs in a CONSUMER span that continues the writer's trace. The end-to-end path (writer, outbox, Kafka, the
 * inbox consumer) is the starter's TracingTest.
 */
class TracingRecordHandlerTest {
    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .setPropagators(ContextPropagators.create(TextMapPropagator.composite(
                    W3CTraceContextPropagator.getInstance(), W3CBaggagePropagator.getInstance())))
            .build();

    @AfterEach
    void close() {
        otel.close();
    }

    @Test
    void theHandlerRunsInAConsumerSpanContinuingTheWritersTrace() throws Exception {
        Span writer = otel.getTracer("test").spanBuilder("place order").startSpan();
        OutboxMessage message;
        try (Scope ignored = writer.makeCurrent();
             Scope baggage = Baggage.builder().put("tenant", "acme").build().makeCurrent()) {
            message = TracingMessageDecorator.of(otel).decorate(OutboxMessage.of("orders", "k", "v"));
        } finally {
            writer.end();
        }
        List<String> seen = new ArrayList<>();
        UUID id = UUID.randomUUID();

        TracingRecordHandler.wrap(otel, "billing", (connection, record, messageId) -> {
            seen.add(Span.current().getSpanContext().getTraceId());
            seen.add(Baggage.current().getEntryValue("tenant"));
        }).handle(null, record(message.headers()), id);

        assertThat(seen).containsExactly(writer.getSpanContext().getTraceId(), "acme");
        SpanData consumer = span("process orders");
        assertThat(consumer.getKind()).isEqualTo(SpanKind.CONSUMER);
        assertThat(consumer.getTraceId()).isEqualTo(writer.getSpanContext().getTraceId());
        assertThat(consumer.getParentSpanId()).isEqualTo(writer.getSpanContext().getSpanId());
        assertThat(consumer.getAttributes().get(TracingMessageDecorator.DESTINATION)).isEqualTo("orders");
        assertThat(consumer.getAttributes().get(TracingMessageDecorator.OPERATION_TYPE)).isEqualTo("process");
        assertThat(consumer.getAttributes().get(TracingRecordHandler.PARTITION)).isEqualTo(2L);
        assertThat(consumer.getAttributes().get(TracingRecordHandler.OFFSET)).isEqualTo(41L);
        assertThat(consumer.getAttributes().get(TracingRecordHandler.MESSAGE_ID)).isEqualTo(id.toString());
        assertThat(consumer.getAttributes().get(TracingRecordHandler.CONSUMER_GROUP)).isEqualTo("billing");
    }

    @Test
    void aFailingHandlerEndsItsSpanWithTheErrorAndRethrows() {
        IllegalStateException failure = new IllegalStateException("no such customer");
        TracingRecordHandler handler = TracingRecordHandler.wrap(otel, (connection, record, messageId) -> {
            throw failure;
        });

        assertThatThrownBy(() -> handler.handle(null, record(List.of()), UUID.randomUUID())).isSameAs(failure);

        SpanData consumer = span("process orders");
        assertThat(consumer.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(consumer.getEvents()).anyMatch(e -> e.getName().equals("exception"));
        assertThat(consumer.hasEnded()).isTrue();
    }

    @Test
    void aRecordWithoutTraceHeadersStartsANewTrace() throws Exception {
        TracingRecordHandler.wrap(otel, (connection, record, messageId) -> { })
                .handle(null, record(List.of()), UUID.randomUUID());

        assertThat(span("process orders").getParentSpanContext().isValid()).isFalse();
    }

    private SpanData span(String name) {
        return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no span '" + name + "' in " + spans.getFinishedSpanItems()));
    }

    private static ConsumerRecord<String, byte[]> record(List<Header> headers) {
        RecordHeaders kafkaHeaders = new RecordHeaders();
        headers.forEach(h -> kafkaHeaders.add(h.name(), h.value()));
        return new ConsumerRecord<>("orders", 2, 41L, 0L, TimestampType.CREATE_TIME, -1, -1, "k",
                "v".getBytes(StandardCharsets.UTF_8), kafkaHeaders, Optional.empty());
    }
}
