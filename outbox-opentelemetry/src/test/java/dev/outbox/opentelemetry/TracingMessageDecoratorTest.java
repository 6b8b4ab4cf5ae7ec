package dev.outbox.opentelemetry;

import dev.outbox.Header;
import dev.outbox.OutboxMessage;
import io.opentelemetry.api.baggage.Baggage;
import io.opentelemetry.api.baggage.propagation.W3CBaggagePropagator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TracingMessageDecoratorTest {
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

    /** Reads a message's headers the way a consumer reads a record's. */
    static final TextMapGetter<List<Header>> HEADERS = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(List<Header> carrier) {
            return carrier.stream().map(Header::name).toList();
        }

        @Override
        public String get(List<Header> carrier, String key) {
            String found = null;
            for (Header h : carrier) {
                if (h.name().equals(key)) {
                    found = h.valueAsString();
                }
            }
            return found;
        }
    };

    private Context extract(OutboxMessage m) {
        return otel.getPropagators().getTextMapPropagator().extract(Context.root(), m.headers(), HEADERS);
    }

    @Test
    void injectsTheCurrentTraceContextAndBaggageKeepingOtherHeadersAndReplacingStaleOnes() {
        TracingMessageDecorator decorator = TracingMessageDecorator.of(otel);
        Span writer = otel.getTracer("test").spanBuilder("place order").startSpan();
        OutboxMessage decorated;
        try (Scope ignored = writer.makeCurrent();
             Scope alsoIgnored = Baggage.current().toBuilder().put("tenant", "t-42").build().makeCurrent()) {
            decorated = decorator.decorate(OutboxMessage.builder("orders", "k").value("v").header("type", "placed")
                    .header("traceparent", "00-stale-stale-01").build());
        } finally {
            writer.end();
        }

        assertThat(decorated.headers()).extracting(Header::name)
                .containsExactly("type", "traceparent", "baggage");
        SpanContext extracted = Span.fromContext(extract(decorated)).getSpanContext();
        assertThat(extracted.isRemote()).isTrue();
        assertThat(extracted.getTraceId()).isEqualTo(writer.getSpanContext().getTraceId());
        assertThat(extracted.getSpanId()).isEqualTo(writer.getSpanContext().getSpanId());
        assertThat(Baggage.fromContext(extract(decorated)).getEntryValue("tenant")).isEqualTo("t-42");
        assertThat(spans.getFinishedSpanItems()).extracting(SpanData::getName).containsExactly("place order");
    }

    @Test
    void producerSpanIsAChildOfTheWritersSpanAndTheRecordCarriesIt() {
        TracingMessageDecorator decorator = TracingMessageDecorator.builder(otel).producerSpans(true)
                .messagingSystem("kafka").build();
        Span writer = otel.getTracer("test").spanBuilder("place order").startSpan();
        OutboxMessage decorated;
        try (Scope ignored = writer.makeCurrent()) {
            decorated = decorator.decorate(OutboxMessage.of("orders", "k", "v"));
        } finally {
            writer.end();
        }

        SpanData producer = spans.getFinishedSpanItems().stream().filter(s -> s.getKind() == SpanKind.PRODUCER)
                .findFirst().orElseThrow();
        assertThat(producer.getName()).isEqualTo("create orders");
        assertThat(producer.getParentSpanId()).isEqualTo(writer.getSpanContext().getSpanId());
        assertThat(producer.getTraceId()).isEqualTo(writer.getSpanContext().getTraceId());
        assertThat(producer.getAttributes().get(TracingMessageDecorator.MESSAGING_SYSTEM)).isEqualTo("kafka");
        assertThat(producer.getAttributes().get(TracingMessageDecorator.DESTINATION)).isEqualTo("orders");
        assertThat(producer.getAttributes().get(TracingMessageDecorator.OPERATION_TYPE)).isEqualTo("create");
        assertThat(producer.getInstrumentationScopeInfo().getName())
                .isEqualTo(TracingMessageDecorator.INSTRUMENTATION_NAME);
        SpanContext extracted = Span.fromContext(extract(decorated)).getSpanContext();
        assertThat(extracted.getSpanId()).isEqualTo(producer.getSpanId());
        assertThat(extracted.getTraceId()).isEqualTo(writer.getSpanContext().getTraceId());
    }

    @Test
    void withoutACurrentSpanOrBaggageTheMessageIsUnchanged() {
        OutboxMessage m = OutboxMessage.builder("orders", "k").value("v").header("type", "placed").build();
        assertThat(TracingMessageDecorator.of(otel).decorate(m)).isSameAs(m);
    }

    @Test
    void blankMessagingSystemIsRejectedNamingIt() {
        assertThatThrownBy(() -> TracingMessageDecorator.builder(otel).messagingSystem(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("messagingSystem");
    }
}
